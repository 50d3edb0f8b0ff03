// Package peer is proclock's native peer: this test binary re-executed
// (a locktest role) to take locks on command, in a real process on the
// native platform. conformance.Native's worlds are made of them; proclock's
// own stress and chaos runs drive them harder (Stress, Chaos).
package peer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// role is a native peer; its one argument is the mechanism it locks with.
var role = locktest.NewRole("conformance-peer", func(args []string) int {
	if len(args) != 1 {
		fmt.Fprintf(os.Stderr, "peer: want one argument, the mechanism; got %q\n", args)
		return 2
	}
	p := platform.Native()
	switch proclock.Mechanism(args[0]) {
	case proclock.MechanismFile:
		p = p.WithoutSQLite()
	case MechanismSQLiteSQL:
		if SQLPath == nil {
			fmt.Fprintf(os.Stderr, "peer: %s needs the SQL path: the test binary imports internal/peer/sqlpeer\n", args[0])
			return 2
		}
		p.SQLite = SQLPath()
	}
	var t *tracer
	if os.Getenv(TraceEnv) != "" {
		t = &tracer{pid: os.Getpid()}
		p = traced(p, t, proclock.Mechanism(args[0]) != MechanismSQLiteSQL)
	}
	servePeer(p, t, os.Stdin, os.Stdout)
	return 0
})

// MechanismSQLiteSQL, given to Spawn, makes a peer of the SQLite mechanism
// that takes SQLite's lock through SQL on a connection, as it does where
// the OS's SQLite is not known to lock bytes (platform.SQLite.LocksBytes),
// and as an older proclock did on linux, not by the byte-range locks it
// takes itself there. Its test binary imports internal/peer/sqlpeer.
const MechanismSQLiteSQL proclock.Mechanism = "sqlite(sql)"

// SQLPath is the native SQLite of the SQL path (internal/locktest/sqlpath.Native),
// set by package internal/peer/sqlpeer: a peer (and so conformance) links
// no SQLite engine unless its test binary asks for one.
var SQLPath func() platform.SQLite

// peerServer runs proclock on commands from a harness: each request in its
// own goroutine, so that a waiting Acquire can be cancelled.
type peerServer struct {
	p   *platform.Platform
	enc *json.Encoder
	// trace records the filesystem operations of stress runs; nil
	// unless TraceEnv is set.
	trace *tracer

	mu      sync.Mutex
	locks   map[string]*proclock.Lock
	cancels map[int]context.CancelFunc
}

func servePeer(p *platform.Platform, t *tracer, in io.Reader, out io.Writer) {
	s := &peerServer{p: p, trace: t, enc: json.NewEncoder(out), locks: map[string]*proclock.Lock{}, cancels: map[int]context.CancelFunc{}}
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
		res, err := stress(ctx, s.platform(), *req.Stress, s.trace)
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
