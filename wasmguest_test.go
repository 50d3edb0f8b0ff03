package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// hostProcess is the Process a wasm host injects when it cannot give its
// guest /proc (docs/wasm.md): it tells the guest who its host process is,
// and answers lookups from what the host knows of the system's processes
// (here, a table; a real host asks its OS, through a host function).
type hostProcess struct {
	self  platform.Identity
	known map[int]uint64 // pid -> start time, of the processes alive
}

func (h hostProcess) Self() (platform.Identity, error) { return h.self, nil }

func (h hostProcess) Lookup(pid int) (platform.PIDInfo, error) {
	start, ok := h.known[pid]
	return platform.PIDInfo{Exists: ok, StartTime: start}, nil
}

// A host without /proc to give injects its own Process. Two guests, each
// the only guest of its host process, lock one path; when the first's host
// process ends without a release, the second takes the lock.
func ExampleAcquire_hostProcess() {
	ctx := context.Background()
	w := fake.New() // stands for the filesystem the guests share
	alive := map[int]uint64{4242: 1000, 4243: 2000}
	guest := func(pid int, fs lockfs.FS) *platform.Platform {
		self := platform.Identity{Host: "buildhost", BootID: "b-1", PID: pid, StartTime: alive[pid]}
		return &platform.Platform{FS: fs, Process: hostProcess{self: self, known: alive}}
	}
	a, b := guest(4242, w.Spawn().Platform().FS), guest(4243, w.Spawn().Platform().FS)

	lock, err := proclock.Acquire(ctx, a, "/tmp/agent.lock", proclock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("a holds:", lock.Holder())
	_, err = proclock.Acquire(ctx, b, "/tmp/agent.lock", proclock.Options{})
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		fmt.Println("b: held by", held.Holder)
	}

	delete(alive, 4242) // a's host process ends; a never released
	lock, err = proclock.Acquire(ctx, b, "/tmp/agent.lock", proclock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("b holds:", lock.Holder())
	lock.Release()
	// Output:
	// a holds: pid 4242 on buildhost
	// b: held by pid 4242 on buildhost
	// b holds: pid 4243 on buildhost
}

// An injected Process that cannot tell who this is disables the file
// mechanism with its error; one whose lookups fail never has its holders
// taken for dead.
func TestHostProcessFailures(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	errHost := errors.New("host: no identity to give")
	noSelf := &platform.Platform{FS: w.Spawn().Platform().FS, Process: failingProcess{self: errHost}}
	if l, err := proclock.Acquire(ctx, noSelf, "/tmp/x.lock", proclock.Options{}); !errors.Is(err, errHost) {
		t.Fatalf("Acquire with a failing Self = %v, %v; want an error matching the host's", l, err)
	}
	if _, err := w.FS().Lstat("/tmp/x.lock"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Acquire with a failing Self left /tmp/x.lock (%v); want nothing created", err)
	}

	// A holder whose host process ended, judged by a guest whose lookups
	// fail: alive, for all it can tell.
	holder := &platform.Platform{FS: w.Spawn().Platform().FS, Process: hostProcess{self: platform.Identity{Host: "buildhost", BootID: "b-1", PID: 4242, StartTime: 7}}}
	if _, err := proclock.Acquire(ctx, holder, "/tmp/x.lock", proclock.Options{}); err != nil {
		t.Fatal(err)
	}
	blind := &platform.Platform{FS: w.Spawn().Platform().FS, Process: failingProcess{
		id:     platform.Identity{Host: "buildhost", BootID: "b-1", PID: 4243, StartTime: 8},
		lookup: errors.New("host: cannot look up pids"),
	}}
	_, err := proclock.Acquire(ctx, blind, "/tmp/x.lock", proclock.Options{})
	if held, ok := errors.AsType[*proclock.HeldError](err); !ok || held.Holder == nil || held.Holder.PID != 4242 {
		t.Errorf("Acquire by a guest whose lookups fail = %v; want held by pid 4242", err)
	}
}

// failingProcess fails Self with self, or Lookup with lookup.
type failingProcess struct {
	id     platform.Identity
	self   error
	lookup error
}

func (f failingProcess) Self() (platform.Identity, error)     { return f.id, f.self }
func (f failingProcess) Lookup(int) (platform.PIDInfo, error) { return platform.PIDInfo{}, f.lookup }

// guestFS is a guest's own view of its host's filesystem. Two guests of one
// host process run separate Go runtimes with separate turns; a platform
// keys its turns by its FS value, so each guest here has its own.
type guestFS struct{ lockfs.FS }

// guestOf is the native platform of a wasm guest of host: the host
// process's identity (a guest's self is its host process, docs/wasm.md),
// with the file mechanism.
func guestOf(host *fake.Process) *platform.Platform {
	p := host.Platform().WithoutSQLite()
	p.FS = &guestFS{p.FS}
	return p
}

// Two guests of one host process record the same identity; each sees the
// other's lock file as its host's own, alive: held, never reclaimed. So
// they exclude each other, but a guest that ends without releasing leaves
// a lock its host's other guests cannot take until the host exits.
func TestGuestsOfOneHost(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	host := w.Spawn()
	g1, g2 := guestOf(host), guestOf(host)

	lock, err := proclock.Acquire(ctx, g1, "/tmp/agent.lock", proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	_, err = proclock.Acquire(ctx, g2, "/tmp/agent.lock", proclock.Options{})
	if held, ok := errors.AsType[*proclock.HeldError](err); !ok || held.Holder == nil || held.Holder.PID != host.PID() {
		t.Fatalf("second guest's Acquire = %v; want held by the host, pid %d", err, host.PID())
	}
	if err := lock.Release(); err != nil {
		t.Fatal(err)
	}
	abandoned, err := proclock.Acquire(ctx, g2, "/tmp/agent.lock", proclock.Options{})
	if err != nil {
		t.Fatalf("second guest after the first released: %v", err)
	}
	_ = abandoned // the second guest ends here without releasing

	if _, err := proclock.Acquire(ctx, g1, "/tmp/agent.lock", proclock.Options{}); !errors.Is(err, proclock.ErrHeld) {
		t.Fatalf("first guest after the second ended without releasing = %v; want held (its host lives)", err)
	}
	host.Kill()
	other := w.Spawn().Platform().WithoutSQLite()
	lock, err = proclock.Acquire(ctx, other, "/tmp/agent.lock", proclock.Options{})
	if err != nil {
		t.Fatalf("after the host process died: %v; want the lock", err)
	}
	lock.Release()
}

// Guests of one host process, waiting on one lock at once, take turns: one
// holder at a time.
func TestGuestsOfOneHostExclude(t *testing.T) {
	const guests, rounds = 3, 20
	ctx := context.Background()
	w := fake.New()
	host := w.Spawn()
	var (
		mu        sync.Mutex
		inside    int
		overlaps  int
		wg        sync.WaitGroup
		errs      = make(chan error, guests)
		completed int
	)
	for range guests {
		p := guestOf(host)
		wg.Go(func() {
			for range rounds {
				lock, err := proclock.Acquire(ctx, p, "/tmp/agent.lock", proclock.Options{Wait: true})
				if err != nil {
					errs <- err
					return
				}
				mu.Lock()
				inside++
				if inside > 1 {
					overlaps++
				}
				mu.Unlock()
				runtime.Gosched() // a moment for another guest to come in
				mu.Lock()
				inside--
				completed++
				mu.Unlock()
				if err := lock.Release(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if overlaps != 0 || completed != guests*rounds {
		t.Errorf("%d overlaps, %d critical sections; want 0 and %d", overlaps, completed, guests*rounds)
	}
}

// A host that cannot give /proc keeps the rest of Native (its filesystem,
// and SQLite where there is one) and injects its own Process: Self and
// Lookup, answered by the host (docs/wasm.md, "A host that cannot give
// /proc").
func ExampleAcquire_injectedProcess() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agent-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agent.lock")
	host := hostProcess{
		self:  platform.Identity{Host: "buildhost", BootID: "b-1", PID: 4242, StartTime: 1000},
		known: map[int]uint64{4242: 1000},
	}

	p := platform.Native()
	p.Process = host // Self and Lookup, answered by the host
	lock, err := proclock.Acquire(ctx, p, path, proclock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("holds:", lock.Holder())
	if err := lock.Release(); err != nil {
		log.Fatal(err)
	}
	// Output:
	// holds: pid 4242 on buildhost
}

// pauseClock is a guest's clock as a waiting Acquire sees it, when it has
// no wake-up source: each Sleep is noted and returns at once, after then.
type pauseClock struct {
	platform.Clock // its time
	pauses         []time.Duration
	then           func(pauses int)
}

func (c *pauseClock) Sleep(ctx context.Context, d time.Duration) error {
	c.pauses = append(c.pauses, d)
	c.then(len(c.pauses))
	return ctx.Err()
}

// A guest has no inotify (Native().Wake is nil there, TestNativeWake), so
// a waiting guest polls: pauses on its clock that start at 4 ms at most and
// double up to 100 ms (docs/design.md, "Waiting"), until an attempt finds
// the lock free.
func TestGuestWaitPolls(t *testing.T) {
	const released = 12 // the holder lets go during this pause
	ctx := context.Background()
	w := fake.New()
	holder := w.Spawn().Platform().WithoutSQLite()
	held, err := proclock.Acquire(ctx, holder, "/tmp/agent.lock", proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	guest := guestOf(w.Spawn())
	guest.Wake = nil
	clock := &pauseClock{Clock: guest.Time()}
	clock.then = func(n int) {
		if n == released {
			if err := held.Release(); err != nil {
				t.Error(err)
			}
		}
	}
	guest.Clock = clock
	lock, err := proclock.Acquire(ctx, guest, "/tmp/agent.lock", proclock.Options{Wait: true})
	if err != nil {
		t.Fatalf("waiting guest: %v", err)
	}
	defer lock.Release()
	if len(clock.pauses) != released {
		t.Errorf("the guest paused %d times: %v; want %d, its attempt after the release taking the lock", len(clock.pauses), clock.pauses, released)
	}
	bound := 4 * time.Millisecond
	for i, d := range clock.pauses {
		if d <= 0 || d > bound {
			t.Errorf("pause %d of %v: %v; want up to %v", i, clock.pauses, d, bound)
		}
		if bound == 100*time.Millisecond && d < 50*time.Millisecond {
			t.Errorf("pause %d of %v: %v; want the longest back-off, 50 to 100 ms", i, clock.pauses, d)
		}
		bound = min(2*bound, 100*time.Millisecond)
	}
}
