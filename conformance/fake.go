package conformance

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Fake returns a harness whose peers are processes of a fake world (one
// world per case), locking with mech.
func Fake(mech proclock.Mechanism) Harness { return fakeHarness{mech: mech} }

type fakeHarness struct{ mech proclock.Mechanism }

func (h fakeHarness) Mechanism() proclock.Mechanism { return h.mech }

func (h fakeHarness) New(t *testing.T) World {
	w := fake.New()
	const dir = "/locks"
	if err := w.Mkdir(dir, 0o755); err != nil {
		t.Fatalf("fake world: %v", err)
	}
	return &fakeWorld{w: w, mech: h.mech, dir: dir}
}

type fakeWorld struct {
	w    *fake.World
	mech proclock.Mechanism
	dir  string
}

func (fw *fakeWorld) Dir() string    { return fw.dir }
func (fw *fakeWorld) FS() lockfs.FS  { return fw.w.FS() }
func (fw *fakeWorld) Now() time.Time { return fw.w.Now() }

func (fw *fakeWorld) Mkdir(name string, perm fs.FileMode) error { return fw.w.Mkdir(name, perm) }

func (fw *fakeWorld) Advance(d time.Duration) bool {
	fw.w.Advance(d)
	return true
}

func (fw *fakeWorld) Spawn(t *testing.T) Peer { return fw.SpawnMechanism(t, fw.mech) }

func (fw *fakeWorld) SpawnMechanism(t *testing.T, mech proclock.Mechanism) Peer {
	proc := fw.w.Spawn()
	p := proc.Platform()
	if mech == proclock.MechanismFile {
		p = p.WithoutSQLite()
	} else if p.SQLite == nil {
		t.Skipf("the fake world has no SQLite for the %s mechanism", mech)
	}
	return FakePeer(proc, p)
}

// FakePeer returns a Peer that runs proclock's calls in this test process,
// through p, as the fake process proc: proc is who it is (Identity), how it
// dies (Kill) and what loses its identity (FailIdentity). It is the Peer
// of a harness of your own over fake worlds whose processes lock through
// a platform of your own, made from proc's (docs/testing.md).
func FakePeer(proc *fake.Process, p *platform.Platform) Peer {
	return &fakePeer{proc: proc, p: p, locks: map[string]*proclock.Lock{}}
}

type fakePeer struct {
	proc *fake.Process
	p    *platform.Platform

	mu    sync.Mutex
	locks map[string]*proclock.Lock
}

func (fp *fakePeer) Identity() platform.Identity { return fp.proc.Identity() }

func (fp *fakePeer) Acquire(ctx context.Context, path string, opts proclock.Options) error {
	l, err := proclock.Acquire(ctx, fp.p, path, opts)
	if err == nil {
		fp.mu.Lock()
		fp.locks[path] = l
		fp.mu.Unlock()
	}
	return err
}

func (fp *fakePeer) Release(path string) error {
	fp.mu.Lock()
	l := fp.locks[path]
	delete(fp.locks, path)
	fp.mu.Unlock()
	if l == nil {
		return fmt.Errorf("pid %d holds no lock at %s", fp.proc.PID(), path)
	}
	return l.Release()
}

func (fp *fakePeer) IsHeld(ctx context.Context, path string) (bool, error) {
	return proclock.IsHeld(ctx, fp.p, path)
}

func (fp *fakePeer) Inspect(ctx context.Context, path string) (proclock.Status, error) {
	return proclock.Inspect(ctx, fp.p, path)
}

func (fp *fakePeer) Kill() { fp.proc.Kill() }

// errNoIdentity is what a peer told to lose its identity gets from Self.
var errNoIdentity = errors.New("identity denied (staged by the harness)")

func (fp *fakePeer) FailIdentity() bool {
	fp.proc.FailIdentity(errNoIdentity)
	return true
}
