package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// PeerEnv, set in a process's environment, makes ServePeer serve: the
// native harness re-executes the test binary with it.
const PeerEnv = "PROCLOCK_CONFORMANCE_PEER"

// MaybeServePeer turns the process into a native peer when the native
// harness started it, and exits when the harness closes its stdin; else it
// returns at once. Call it first in TestMain of any package that runs the
// native harness:
//
//	func TestMain(m *testing.M) {
//		conformance.MaybeServePeer()
//		os.Exit(m.Run())
//	}
func MaybeServePeer() {
	mech := os.Getenv(PeerEnv)
	if mech == "" {
		return
	}
	p := platform.Native()
	if proclock.Mechanism(mech) == proclock.MechanismFile {
		p.SQLite = nil
	}
	servePeer(p, os.Stdin, os.Stdout)
	os.Exit(0)
}

// Native returns a harness whose peers are this test binary re-executed as
// real processes on the native platform, locking with mech, and killed
// with SIGKILL. The test binary's TestMain must call MaybeServePeer.
func Native(mech proclock.Mechanism) Harness { return nativeHarness{mech: mech} }

type nativeHarness struct{ mech proclock.Mechanism }

func (h nativeHarness) Mechanism() proclock.Mechanism { return h.mech }

func (h nativeHarness) New(t *testing.T) World {
	return &nativeWorld{mech: h.mech, dir: t.TempDir()}
}

type nativeWorld struct {
	mech proclock.Mechanism
	dir  string
}

func (w *nativeWorld) Dir() string                { return w.dir }
func (w *nativeWorld) FS() lockfs.FS              { return lockfs.OS() }
func (w *nativeWorld) Now() time.Time             { return time.Now() }
func (w *nativeWorld) Advance(time.Duration) bool { return false }
func (w *nativeWorld) Spawn(t *testing.T) Peer    { return SpawnNative(t, w.mech) }

func (w *nativeWorld) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }

func (w *nativeWorld) Chtimes(name string, atime, mtime time.Time) error {
	return os.Chtimes(name, atime, mtime)
}

func (w *nativeWorld) SpawnMechanism(t *testing.T, mech proclock.Mechanism) Peer {
	return SpawnNative(t, mech)
}

// request is one command to a native peer.
type request struct {
	ID      int              `json:"id"`
	Op      string           `json:"op"`
	Path    string           `json:"path,omitempty"`
	Opts    proclock.Options `json:"opts,omitzero"`
	Timeout time.Duration    `json:"timeout,omitempty"`
	Stress  *StressPlan      `json:"stress,omitempty"`
	Chaos   *ChaosPlan       `json:"chaos,omitempty"`
	// Cancelled: the caller's context had ended before the request.
	Cancelled bool `json:"cancelled,omitempty"`
}

// response is a native peer's answer to the request with the same ID.
type response struct {
	ID       int                `json:"id"`
	Err      *wireError         `json:"err,omitempty"`
	Held     bool               `json:"held,omitempty"`
	Status   *proclock.Status   `json:"status,omitempty"`
	Identity *platform.Identity `json:"identity,omitempty"`
	Stress   *StressResult      `json:"stressResult,omitempty"`
	Chaos    *ChaosResult       `json:"chaosResult,omitempty"`
}

// wireError carries an error across the process boundary with what
// callers branch on: held (and by whom), context, *fs.PathError.
type wireError struct {
	Msg     string             `json:"msg"`
	Held    bool               `json:"held,omitempty"`
	Path    string             `json:"path,omitempty"`
	Holder  *platform.Identity `json:"holder,omitempty"`
	Context string             `json:"context,omitempty"`
	PathOp  string             `json:"pathOp,omitempty"`
	NotLock bool               `json:"notLockFile,omitempty"`
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		w.Held, w.Path, w.Holder = true, held.Path, held.Holder
	}
	switch {
	case errors.Is(err, context.Canceled):
		w.Context = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		w.Context = "deadline"
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		w.PathOp, w.Path = pe.Op, pe.Path
	}
	w.NotLock = errors.Is(err, proclock.ErrNotLockFile)
	return w
}

func (w *wireError) toError() error {
	if w == nil {
		return nil
	}
	var errs []error
	if w.Held {
		errs = append(errs, &proclock.HeldError{Path: w.Path, Holder: w.Holder})
	}
	switch w.Context {
	case "canceled":
		errs = append(errs, context.Canceled)
	case "deadline":
		errs = append(errs, context.DeadlineExceeded)
	}
	if w.PathOp != "" {
		errs = append(errs, &fs.PathError{Op: w.PathOp, Path: w.Path, Err: errors.New(w.Msg)})
	}
	if w.NotLock {
		errs = append(errs, proclock.ErrNotLockFile)
	}
	return &peerError{msg: w.Msg, errs: errs}
}

// peerError is an error from a native peer: its message, and the errors
// it matched there.
type peerError struct {
	msg  string
	errs []error
}

func (e *peerError) Error() string   { return "peer: " + e.msg }
func (e *peerError) Unwrap() []error { return e.errs }

// NativePeer is a native peer process.
type NativePeer struct {
	t    *testing.T
	cmd  *exec.Cmd
	in   io.WriteCloser
	id   platform.Identity
	done chan struct{}

	mu      sync.Mutex
	enc     *json.Encoder
	next    int
	pending map[int]chan response
}

// SpawnNative starts a native peer locking with mech; t's cleanup kills it.
func SpawnNative(t *testing.T, mech proclock.Mechanism) *NativePeer {
	t.Helper()
	if runtime.GOOS == "wasip1" || runtime.GOOS == "js" {
		t.Skipf("native peers are subprocesses, which %s cannot start", runtime.GOOS)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), PeerEnv+"="+string(mech))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting a native peer: %v", err)
	}
	p := &NativePeer{t: t, cmd: cmd, in: in, enc: json.NewEncoder(in), done: make(chan struct{}), pending: map[int]chan response{}}
	go p.readResponses(out)
	t.Cleanup(p.Kill)
	r := p.call(context.Background(), request{Op: "identity"})
	if r.Identity == nil {
		t.Fatalf("native peer gave no identity: %v", r.Err.toError())
	}
	p.id = *r.Identity
	return p
}

func (p *NativePeer) readResponses(out io.Reader) {
	defer close(p.done)
	dec := json.NewDecoder(out)
	for {
		var r response
		if err := dec.Decode(&r); err != nil {
			return
		}
		p.mu.Lock()
		ch := p.pending[r.ID]
		delete(p.pending, r.ID)
		p.mu.Unlock()
		if ch != nil {
			ch <- r
		}
	}
}

// call sends req and waits for its answer. When ctx ends first, the peer
// is told to cancel the request, and its answer is still awaited.
func (p *NativePeer) call(ctx context.Context, req request) response {
	if d, ok := ctx.Deadline(); ok {
		req.Timeout = max(time.Until(d), time.Nanosecond)
	}
	req.Cancelled = ctx.Err() != nil
	ch := make(chan response, 1)
	p.mu.Lock()
	p.next++
	req.ID = p.next
	p.pending[req.ID] = ch
	err := p.enc.Encode(req)
	p.mu.Unlock()
	if err != nil {
		return response{Err: &wireError{Msg: "peer is gone: " + err.Error()}}
	}
	select {
	case r := <-ch:
		return r
	case <-p.done:
		return response{Err: &wireError{Msg: "peer is gone"}}
	case <-ctx.Done():
	}
	// A deadline runs out in the peer too, moments later (it got the
	// time left); a cancellation has to be passed on.
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		p.mu.Lock()
		p.enc.Encode(request{Op: "cancel", ID: req.ID})
		p.mu.Unlock()
	}
	select {
	case r := <-ch:
		return r
	case <-p.done:
		return response{Err: &wireError{Msg: "peer is gone"}}
	}
}

// Identity is the peer's identity.
func (p *NativePeer) Identity() platform.Identity { return p.id }

// Process is the peer's process, to signal it.
func (p *NativePeer) Process() *os.Process { return p.cmd.Process }

func (p *NativePeer) Acquire(ctx context.Context, path string, opts proclock.Options) error {
	return p.call(ctx, request{Op: "acquire", Path: path, Opts: opts}).Err.toError()
}

func (p *NativePeer) Release(path string) error {
	return p.call(context.Background(), request{Op: "release", Path: path}).Err.toError()
}

func (p *NativePeer) IsHeld(ctx context.Context, path string) (bool, error) {
	r := p.call(ctx, request{Op: "isheld", Path: path})
	return r.Held, r.Err.toError()
}

func (p *NativePeer) Inspect(ctx context.Context, path string) (proclock.Status, error) {
	r := p.call(ctx, request{Op: "inspect", Path: path})
	if r.Status == nil {
		return proclock.Status{}, r.Err.toError()
	}
	return *r.Status, r.Err.toError()
}

func (p *NativePeer) FailIdentity() bool {
	return p.call(context.Background(), request{Op: "failidentity"}).Err == nil
}

// Stress runs plan in the peer (see StressPlan).
func (p *NativePeer) Stress(ctx context.Context, plan StressPlan) (StressResult, error) {
	r := p.call(ctx, request{Op: "stress", Stress: &plan})
	if r.Stress == nil {
		return StressResult{}, r.Err.toError()
	}
	return *r.Stress, r.Err.toError()
}

// Kill ends the peer with SIGKILL and reaps it.
func (p *NativePeer) Kill() {
	select {
	case <-p.done:
	default:
		p.cmd.Process.Kill()
	}
	p.in.Close()
	<-p.done
	p.cmd.Wait()
}
