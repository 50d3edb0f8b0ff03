package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

func TestMain(m *testing.M) { locktest.Main(m) }

// A peer is this test binary re-executed to take cluster locks on
// command, over JSON lines on stdin and stdout: a holder in a real
// process, that a test can stop (SIGSTOP) and kill (SIGKILL). Its
// arguments: the endpoints (comma-separated), then the TTL, margin and
// lock-delay of its acquisitions (Go durations).
var peerRole = locktest.NewRole("cluster-peer", func(args []string) int {
	if len(args) != 4 {
		fmt.Fprintf(os.Stderr, "cluster-peer: want endpoints ttl margin lockdelay; got %q\n", args)
		return 2
	}
	var opts Options
	for i, d := range []*time.Duration{&opts.TTL, &opts.Margin, &opts.LockDelay} {
		v, err := time.ParseDuration(args[i+1])
		if err != nil {
			fmt.Fprintln(os.Stderr, "cluster-peer:", err)
			return 2
		}
		*d = v
	}
	c, err := clientv3.New(clientConfig(strings.Split(args[0], ",")))
	if err != nil {
		fmt.Fprintln(os.Stderr, "cluster-peer:", err)
		return 2
	}
	defer c.Close()
	servePeer(c, opts)
	return 0
})

// peerRequest is one command to a peer.
type peerRequest struct {
	ID        int           `json:"id"`
	Op        string        `json:"op"`
	Name      string        `json:"name,omitempty"`
	Wait      bool          `json:"wait,omitempty"`
	Timeout   time.Duration `json:"timeout,omitempty"`
	Cancelled bool          `json:"cancelled,omitempty"`
	Key       string        `json:"key,omitempty"`
	Value     string        `json:"value,omitempty"`
	Rounds    int           `json:"rounds,omitempty"`
}

// peerResponse answers the request of its ID; ID 0 is an event (Event
// names it): "lost", when a held lock learnt it was lost.
type peerResponse struct {
	ID        int                `json:"id"`
	Event     string             `json:"event,omitempty"`
	Err       *wireError         `json:"err,omitempty"`
	Name      string             `json:"name,omitempty"`
	Key       string             `json:"key,omitempty"`
	Fence     int64              `json:"fence,omitempty"`
	Lease     int64              `json:"lease,omitempty"`
	Delay     time.Duration      `json:"delay,omitempty"`
	Held      bool               `json:"held,omitempty"`
	OK        bool               `json:"ok,omitempty"`
	Status    *Status            `json:"status,omitempty"`
	Identity  *platform.Identity `json:"identity,omitempty"`
	Fences    []int64            `json:"fences,omitempty"`
	Overlaps  int                `json:"overlaps,omitempty"`
	Refused   int                `json:"refused,omitempty"`
	Cause     string             `json:"cause,omitempty"`
	Lost      bool               `json:"lost,omitempty"`
	LostAfter time.Duration      `json:"lostAfter,omitempty"`
	KeyGone   bool               `json:"keyGone,omitempty"` // a "lost" event's cause is ErrKeyGone
}

// wireError carries what callers branch on across the pipe.
type wireError struct {
	Msg     string             `json:"msg"`
	Held    bool               `json:"held,omitempty"`
	Holder  *platform.Identity `json:"holder,omitempty"`
	Reason  string             `json:"reason,omitempty"`
	Since   time.Time          `json:"since,omitzero"`
	Context string             `json:"context,omitempty"`
	Lost    bool               `json:"lost,omitempty"`
}

func toWire(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error(), Lost: errors.Is(err, proclock.ErrLost)}
	if h, ok := errors.AsType[*proclock.HeldError](err); ok {
		w.Held, w.Holder, w.Reason, w.Since = true, h.Holder, h.Reason, h.Since
	}
	switch {
	case errors.Is(err, context.Canceled):
		w.Context = "canceled"
	case errors.Is(err, context.DeadlineExceeded):
		w.Context = "deadline"
	}
	return w
}

func (w *wireError) toError(name string) error {
	if w == nil {
		return nil
	}
	var errs []error
	if w.Held {
		errs = append(errs, &proclock.HeldError{Path: name, Holder: w.Holder, Reason: w.Reason, Since: w.Since})
	}
	switch w.Context {
	case "canceled":
		errs = append(errs, context.Canceled)
	case "deadline":
		errs = append(errs, context.DeadlineExceeded)
	}
	if w.Lost {
		errs = append(errs, proclock.ErrLost)
	}
	return &peerError{msg: w.Msg, errs: errs}
}

type peerError struct {
	msg  string
	errs []error
}

func (e *peerError) Error() string   { return "peer: " + e.msg }
func (e *peerError) Unwrap() []error { return e.errs }

// peerServer serves one peer's requests, each in its own goroutine.
type peerServer struct {
	c    *clientv3.Client
	opts Options

	mu      sync.Mutex
	enc     *json.Encoder
	locks   map[string]*Lock
	cancels map[int]context.CancelFunc
}

func servePeer(c *clientv3.Client, opts Options) {
	s := &peerServer{c: c, opts: opts, enc: json.NewEncoder(os.Stdout), locks: map[string]*Lock{}, cancels: map[int]context.CancelFunc{}}
	dec := json.NewDecoder(bufio.NewReader(os.Stdin))
	var wg sync.WaitGroup
	for {
		var req peerRequest
		if err := dec.Decode(&req); err != nil {
			break
		}
		if req.Op == "cancel" {
			s.cancel(req.ID)
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		if req.Timeout > 0 {
			ctx, cancel = context.WithTimeout(context.Background(), req.Timeout)
		}
		if req.Cancelled {
			cancel()
		}
		s.mu.Lock()
		s.cancels[req.ID] = cancel
		s.mu.Unlock()
		wg.Go(func() {
			r := s.serve(ctx, req)
			r.ID = req.ID
			s.cancel(req.ID)
			s.send(r)
		})
	}
	wg.Wait()
}

func (s *peerServer) send(r peerResponse) {
	s.mu.Lock()
	s.enc.Encode(r)
	s.mu.Unlock()
}

func (s *peerServer) cancel(id int) {
	s.mu.Lock()
	cancel := s.cancels[id]
	delete(s.cancels, id)
	s.mu.Unlock()
	if cancel != nil {
		cancel()
	}
}

func (s *peerServer) lock(name string) *Lock {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.locks[name]
}

func (s *peerServer) serve(ctx context.Context, req peerRequest) peerResponse {
	switch req.Op {
	case "identity":
		return peerResponse{Identity: self()}
	case "acquire":
		opts := s.opts
		opts.Wait = req.Wait
		l, err := Acquire(ctx, s.c, req.Name, opts)
		if err != nil {
			return peerResponse{Err: toWire(err)}
		}
		s.mu.Lock()
		s.locks[req.Name] = l
		s.mu.Unlock()
		go s.tellLoss(l)
		return peerResponse{Key: l.Key(), Fence: l.Fence(), Lease: int64(l.Lease()), Delay: l.LockDelay()}
	case "release":
		s.mu.Lock()
		l := s.locks[req.Name]
		delete(s.locks, req.Name)
		s.mu.Unlock()
		if l == nil {
			return peerResponse{Err: toWire(fmt.Errorf("peer holds no lock %s", req.Name))}
		}
		return peerResponse{Err: toWire(l.Release())}
	case "check":
		// Whether the held lock knows it is lost, right now.
		l := s.lock(req.Name)
		if l == nil {
			return peerResponse{Err: toWire(fmt.Errorf("peer holds no lock %s", req.Name))}
		}
		return peerResponse{Lost: l.Err() != nil, Err: toWire(l.Err())}
	case "put":
		// A write fenced with the held lock's guard.
		l := s.lock(req.Name)
		if l == nil {
			return peerResponse{Err: toWire(fmt.Errorf("peer holds no lock %s", req.Name))}
		}
		resp, err := s.c.Txn(ctx).If(l.Guard()).Then(clientv3.OpPut(req.Key, req.Value)).Commit()
		if err != nil {
			return peerResponse{Err: toWire(err)}
		}
		return peerResponse{OK: resp.Succeeded}
	case "isheld":
		h, err := IsHeld(ctx, s.c, req.Name)
		return peerResponse{Held: h, Err: toWire(err)}
	case "inspect":
		st, err := Inspect(ctx, s.c, req.Name)
		return peerResponse{Status: &st, Err: toWire(err)}
	case "turns":
		return s.turns(ctx, req)
	}
	return peerResponse{Err: toWire(fmt.Errorf("unknown op %q", req.Op))}
}

// tellLoss sends a "lost" event when l learns it is lost.
func (s *peerServer) tellLoss(l *Lock) {
	<-l.Lost()
	s.send(peerResponse{Event: "lost", Name: l.Name(), Fence: l.Fence(), Cause: l.Err().Error(), KeyGone: errors.Is(l.Err(), ErrKeyGone)})
}

// turns takes the lock req.Rounds times, waiting; under it, it marks
// occupancy (a key only one holder may create) and adds one to a counter
// in a transaction fenced with the lock's guard, checking that the fence
// is above the last one written beside the counter.
func (s *peerServer) turns(ctx context.Context, req peerRequest) peerResponse {
	var r peerResponse
	opts := s.opts
	opts.Wait = true
	counter, last, occupied := req.Key+"/counter", req.Key+"/fence", req.Key+"/occupied"
	for range req.Rounds {
		l, err := Acquire(ctx, s.c, req.Name, opts)
		if err != nil {
			return peerResponse{Err: toWire(err)}
		}
		r.Fences = append(r.Fences, l.Fence())
		mark, err := s.c.Txn(ctx).If(clientv3.Compare(clientv3.CreateRevision(occupied), "=", 0)).
			Then(clientv3.OpPut(occupied, fmt.Sprint(os.Getpid()))).Commit()
		if err != nil {
			return peerResponse{Err: toWire(err)}
		}
		if !mark.Succeeded {
			r.Overlaps++
		}
		for {
			g, err := s.c.Get(ctx, counter)
			if err != nil {
				return peerResponse{Err: toWire(err)}
			}
			var n, modRev int64
			if len(g.Kvs) > 0 {
				fmt.Sscan(string(g.Kvs[0].Value), &n)
				modRev = g.Kvs[0].ModRevision
			}
			fg, err := s.c.Get(ctx, last)
			if err != nil {
				return peerResponse{Err: toWire(err)}
			}
			var lastFence int64
			if len(fg.Kvs) > 0 {
				fmt.Sscan(string(fg.Kvs[0].Value), &lastFence)
			}
			if lastFence >= l.Fence() {
				r.Refused++ // a fence not above the last: a stale holder
				break
			}
			resp, err := s.c.Txn(ctx).If(l.Guard(), clientv3.Compare(clientv3.ModRevision(counter), "=", modRev)).
				Then(clientv3.OpPut(counter, fmt.Sprint(n+1)), clientv3.OpPut(last, fmt.Sprint(l.Fence()))).Commit()
			if err != nil {
				return peerResponse{Err: toWire(err)}
			}
			if resp.Succeeded {
				break
			}
			r.Overlaps++ // someone else wrote the counter while we held
		}
		if mark.Succeeded {
			if _, err := s.c.Delete(ctx, occupied); err != nil {
				return peerResponse{Err: toWire(err)}
			}
		}
		if err := l.Release(); err != nil {
			return peerResponse{Err: toWire(err)}
		}
	}
	return r
}

// peer is the test's side of a cluster-peer process.
type peer struct {
	t     testing.TB
	child *locktest.Child
	id    platform.Identity
	done  chan struct{}
	lost  chan lostEvent

	mu      sync.Mutex
	enc     *json.Encoder
	next    int
	pending map[int]chan peerResponse
	keys    map[string]heldKey // by lock name, what the peer holds
}

type heldKey struct {
	key   string
	lease int64
}

// lostEvent is a peer's "lost" event, stamped when it arrived here.
type lostEvent struct {
	name    string
	fence   int64
	cause   string
	keyGone bool // the cause is ErrKeyGone: the holder's watch on its key told
	at      time.Time
}

// peerConfig is what a peer's acquisitions use.
type peerConfig struct {
	endpoints []string
	ttl       time.Duration
	margin    time.Duration
	lockDelay time.Duration
}

func spawnPeer(t testing.TB, cfg peerConfig) *peer {
	t.Helper()
	cmd := peerRole.Command(strings.Join(cfg.endpoints, ","), cfg.ttl.String(), cfg.margin.String(), cfg.lockDelay.String())
	cmd.Stderr = os.Stderr
	c := locktest.Start(t, cmd)
	p := &peer{t: t, child: c, enc: json.NewEncoder(c.Stdin), done: make(chan struct{}), lost: make(chan lostEvent, 16),
		pending: map[int]chan peerResponse{}, keys: map[string]heldKey{}}
	go p.read()
	t.Cleanup(p.kill)
	r := p.call(context.Background(), peerRequest{Op: "identity"})
	if r.Identity == nil {
		t.Fatalf("peer gave no identity: %v", r.Err.toError(""))
	}
	p.id = *r.Identity
	return p
}

func (p *peer) read() {
	defer close(p.done)
	dec := json.NewDecoder(p.child.Stdout)
	for {
		var r peerResponse
		if err := dec.Decode(&r); err != nil {
			return
		}
		if r.Event == "lost" {
			p.lost <- lostEvent{name: r.Name, fence: r.Fence, cause: r.Cause, keyGone: r.KeyGone, at: time.Now()}
			continue
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

func (p *peer) call(ctx context.Context, req peerRequest) peerResponse {
	if d, ok := ctx.Deadline(); ok {
		req.Timeout = max(time.Until(d), time.Nanosecond)
	}
	req.Cancelled = ctx.Err() != nil
	ch := make(chan peerResponse, 1)
	p.mu.Lock()
	p.next++
	req.ID = p.next
	p.pending[req.ID] = ch
	err := p.enc.Encode(req)
	p.mu.Unlock()
	if err != nil {
		return peerResponse{Err: &wireError{Msg: "peer is gone: " + err.Error()}}
	}
	select {
	case r := <-ch:
		return r
	case <-p.done:
		return peerResponse{Err: &wireError{Msg: "peer is gone"}}
	case <-ctx.Done():
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) {
		p.mu.Lock()
		p.enc.Encode(peerRequest{Op: "cancel", ID: req.ID})
		p.mu.Unlock()
	}
	select {
	case r := <-ch:
		return r
	case <-p.done:
		return peerResponse{Err: &wireError{Msg: "peer is gone"}}
	}
}

// acquire takes name in the peer; the response has its key and fence.
func (p *peer) acquire(ctx context.Context, name string, wait bool) (peerResponse, error) {
	r := p.call(ctx, peerRequest{Op: "acquire", Name: name, Wait: wait})
	if r.Err == nil {
		p.mu.Lock()
		p.keys[name] = heldKey{key: r.Key, lease: r.Lease}
		p.mu.Unlock()
	}
	return r, r.Err.toError(name)
}

func (p *peer) mustAcquire(ctx context.Context, name string, wait bool) peerResponse {
	p.t.Helper()
	r, err := p.acquire(ctx, name, wait)
	if err != nil {
		p.t.Fatalf("pid %d: Acquire(%s): %v", p.id.PID, name, err)
	}
	return r
}

func (p *peer) release(name string) error {
	p.mu.Lock()
	delete(p.keys, name)
	p.mu.Unlock()
	return p.call(context.Background(), peerRequest{Op: "release", Name: name}).Err.toError(name)
}

// signal sends sig to the peer's process.
func (p *peer) signal(sig syscall.Signal) {
	p.child.Cmd.Process.Signal(sig)
}

// kill ends the peer with SIGKILL and reaps it.
func (p *peer) kill() {
	select {
	case <-p.done:
	default:
		p.child.Cmd.Process.Kill()
	}
	p.child.Stdin.Close()
	<-p.done
	p.child.Wait()
}

// nextLoss waits for the peer's next "lost" event, up to d.
func (p *peer) nextLoss(d time.Duration) (lostEvent, bool) {
	select {
	case ev := <-p.lost:
		return ev, true
	case <-time.After(d):
		return lostEvent{}, false
	}
}
