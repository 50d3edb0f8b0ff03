package app_test

import (
	"context"
	"fmt"
	"io/fs"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// guestPlatform is the platform the app gets when a wasm host runs it:
// the file mechanism, and no wake-up source (a guest has no inotify), so
// that waits poll. In production the host builds it; here it is made from
// a fake process, so that the suite can put it through every case.
func guestPlatform(p *fake.Process) *platform.Platform {
	pp := p.Platform()
	pp.SQLite = nil
	pp.Wake = nil
	return pp
}

// guestHarness is a conformance.Harness of our own: its peers lock through
// guestPlatform. Its worlds are MixedWorlds, whose SpawnMechanism starts
// native-like SQLite peers beside the guests, so that the cases of both
// mechanisms on one path run too.
type guestHarness struct{}

func (guestHarness) Mechanism() proclock.Mechanism { return proclock.MechanismFile }

func (guestHarness) New(t *testing.T) conformance.World {
	w := fake.New()
	if err := w.Mkdir("/locks", 0o755); err != nil {
		t.Fatal(err)
	}
	return guestWorld{w}
}

type guestWorld struct{ w *fake.World }

func (gw guestWorld) Dir() string    { return "/locks" }
func (gw guestWorld) FS() lockfs.FS  { return gw.w.FS() }
func (gw guestWorld) Now() time.Time { return gw.w.Now() }

// Mkdir stages a directory, as conformance's cases need one.
func (gw guestWorld) Mkdir(name string, perm fs.FileMode) error { return gw.w.Mkdir(name, perm) }

func (gw guestWorld) Advance(d time.Duration) bool {
	gw.w.Advance(d)
	return true
}

func (gw guestWorld) Spawn(t *testing.T) conformance.Peer {
	return gw.SpawnMechanism(t, proclock.MechanismFile)
}

func (gw guestWorld) SpawnMechanism(t *testing.T, mech proclock.Mechanism) conformance.Peer {
	proc := gw.w.Spawn()
	p := proc.Platform() // a native process: SQLite, woken by changes
	if mech == proclock.MechanismFile {
		p = guestPlatform(proc)
	}
	return &peer{proc: proc, p: p, locks: map[string]*proclock.Lock{}}
}

// peer runs proclock's calls in this test process, through one fake
// process's platform, and keeps the locks it takes by path.
type peer struct {
	proc *fake.Process
	p    *platform.Platform

	mu    sync.Mutex
	locks map[string]*proclock.Lock
}

func (pr *peer) Identity() platform.Identity { return pr.proc.Identity() }

func (pr *peer) Acquire(ctx context.Context, path string, opts proclock.Options) error {
	l, err := proclock.Acquire(ctx, pr.p, path, opts)
	if err != nil {
		return err
	}
	pr.mu.Lock()
	defer pr.mu.Unlock()
	pr.locks[path] = l
	return nil
}

func (pr *peer) Release(path string) error {
	pr.mu.Lock()
	l, ok := pr.locks[path]
	delete(pr.locks, path)
	pr.mu.Unlock()
	if !ok {
		return fmt.Errorf("pid %d holds no lock at %s", pr.proc.PID(), path)
	}
	return l.Release()
}

func (pr *peer) IsHeld(ctx context.Context, path string) (bool, error) {
	return proclock.IsHeld(ctx, pr.p, path)
}

func (pr *peer) Inspect(ctx context.Context, path string) (proclock.Status, error) {
	return proclock.Inspect(ctx, pr.p, path)
}

func (pr *peer) Kill() { pr.proc.Kill() }

func (pr *peer) FailIdentity() bool {
	pr.proc.FailIdentity(fmt.Errorf("no /proc in this guest"))
	return true
}

// The suite, run on the guest's platform.
func TestConformanceGuest(t *testing.T) {
	conformance.Run(t, guestHarness{})
}
