package conformance

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strconv"
	"sync"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// peerServer runs proclock on commands from a harness: each request in its
// own goroutine, so that a waiting Acquire can be cancelled.
type peerServer struct {
	p   *platform.Platform
	enc *json.Encoder

	mu      sync.Mutex
	locks   map[string]*proclock.Lock
	cancels map[int]context.CancelFunc
}

func servePeer(p *platform.Platform, in io.Reader, out io.Writer) {
	s := &peerServer{p: p, enc: json.NewEncoder(out), locks: map[string]*proclock.Lock{}, cancels: map[int]context.CancelFunc{}}
	dec := json.NewDecoder(in)
	var wg sync.WaitGroup
	for {
		var req request
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
			s.mu.Lock()
			s.enc.Encode(r)
			s.mu.Unlock()
		})
	}
	wg.Wait()
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

func (s *peerServer) serve(ctx context.Context, req request) response {
	switch req.Op {
	case "identity":
		id, err := s.p.Process.Self()
		if err != nil {
			return response{Err: toWire(err)}
		}
		return response{Identity: &id}
	case "failidentity":
		s.mu.Lock()
		s.p.Process = failingProcess{s.p.Process}
		s.mu.Unlock()
		return response{}
	case "acquire":
		l, err := proclock.Acquire(ctx, s.platform(), req.Path, req.Opts)
		if err == nil {
			s.mu.Lock()
			s.locks[req.Path] = l
			s.mu.Unlock()
		}
		return response{Err: toWire(err)}
	case "release":
		s.mu.Lock()
		l := s.locks[req.Path]
		delete(s.locks, req.Path)
		s.mu.Unlock()
		if l == nil {
			return response{Err: toWire(fmt.Errorf("peer holds no lock at %s", req.Path))}
		}
		return response{Err: toWire(l.Release())}
	case "isheld":
		held, err := proclock.IsHeld(ctx, s.platform(), req.Path)
		return response{Held: held, Err: toWire(err)}
	case "inspect":
		st, err := proclock.Inspect(ctx, s.platform(), req.Path)
		return response{Status: &st, Err: toWire(err)}
	case "stress":
		res, err := stress(ctx, s.platform(), *req.Stress)
		return response{Stress: &res, Err: toWire(err)}
	case "chaos":
		res, err := chaos(ctx, s.platform(), *req.Chaos)
		return response{Chaos: &res, Err: toWire(err)}
	}
	return response{Err: toWire(fmt.Errorf("unknown op %q", req.Op))}
}

// platform is the peer's platform as it is now (FailIdentity changes it).
func (s *peerServer) platform() *platform.Platform {
	s.mu.Lock()
	defer s.mu.Unlock()
	p := *s.p
	return &p
}

// failingProcess is a Process that cannot read its own identity.
type failingProcess struct{ platform.Process }

// errNoIdentity is what a peer told to lose its identity gets from Self.
var errNoIdentity = errors.New("identity denied (staged by the harness)")

func (failingProcess) Self() (platform.Identity, error) { return platform.Identity{}, errNoIdentity }

// StressPlan is a run of acquisitions checked two ways: an occupancy
// marker that two holders at once would trip over (created with O_EXCL on
// entry, removed on exit), and a counter that lost updates would leave
// short.
type StressPlan struct {
	Lock    string           `json:"lock"`
	Marker  string           `json:"marker"`
	Counter string           `json:"counter"`
	N       int              `json:"n"`
	Opts    proclock.Options `json:"opts"`
}

// StressResult is what a stress run saw.
type StressResult struct {
	// Done is the critical sections completed.
	Done int `json:"done"`
	// Overlaps counts entries that found the marker already there.
	Overlaps int `json:"overlaps"`
}

// stress runs plan on p: N times, acquire (waiting), mark, count, unmark,
// release.
func stress(ctx context.Context, p *platform.Platform, plan StressPlan) (StressResult, error) {
	var res StressResult
	plan.Opts.Wait = true
	for range plan.N {
		l, err := proclock.Acquire(ctx, p, plan.Lock, plan.Opts)
		if err != nil {
			return res, err
		}
		overlap, err := criticalSection(p.FS, plan)
		if overlap {
			res.Overlaps++
		}
		if rerr := l.Release(); err == nil {
			err = rerr
		}
		if err != nil {
			return res, err
		}
		res.Done++
	}
	return res, nil
}

// criticalSection marks entry, adds one to the counter file, and unmarks.
// It reports whether another holder's marker was there.
func criticalSection(fsys lockfs.FS, plan StressPlan) (overlap bool, err error) {
	m, err := fsys.OpenFile(plan.Marker, lockfs.CreateExcl, 0o644)
	if errors.Is(err, fs.ErrExist) {
		overlap = true
	} else if err != nil {
		return false, err
	} else {
		m.Close()
		defer fsys.Remove(plan.Marker)
	}
	n := 0
	if data, err := readFile(fsys, plan.Counter); err == nil {
		n, _ = strconv.Atoi(string(data))
	} else if !errors.Is(err, fs.ErrNotExist) {
		return overlap, err
	}
	f, err := fsys.OpenFile(plan.Counter, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return overlap, err
	}
	_, err = f.Write([]byte(strconv.Itoa(n + 1)))
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return overlap, err
}

func readFile(fsys lockfs.FS, name string) ([]byte, error) {
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return io.ReadAll(f)
}
