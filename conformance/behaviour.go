package conformance

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/lockfs"
)

// Backend is what RunBehaviour needs of a lock service: a way to make, for
// each case, a room of processes that take its locks. The cluster
// module's is one, for its locks on etcd; a Harness's locks are files, and
// Run puts it through the same cases.
type Backend interface {
	// Mechanism names the backend's locks, as Status.Mechanism does.
	Mechanism() proclock.Mechanism
	// NewRoom makes a room for one case; t's cleanup ends it.
	NewRoom(t *testing.T) Room
}

// Room is one case's share of a backend.
type Room interface {
	// Dir is where the case's locks are named, empty at first: a
	// directory for host locks, a key prefix for cluster locks. A case
	// names its locks path.Join(Dir(), base).
	Dir() string
	// Spawn starts a process that takes locks. Its Kill must return
	// only once the backend lets another process take what the killed
	// one held (at once for host locks; a cluster lock's lease has to
	// run out first).
	Spawn(t *testing.T) Peer
}

// behaviourCases are the cases about a lock's behaviour, not its files:
// exclusion, the holder named, waiting and its cancellation, turns within
// one process, a crashed holder's lock taken again. They run against every
// Backend; Run runs them too, with the rest.
var behaviourCases = []string{
	"AcquireHeldRelease",
	"DeadHolderReplaced",
	"WaitForRelease",
	"WaitGivesUp",
	"WaitCancelled",
	"ConcurrentTakeover",
	"SameProcessTurns",
}

// RunBehaviour puts b through the behaviour cases, each in a fresh room,
// as subtests named for the case. A backend whose locks are not files runs
// these alone; Run runs them with the file cases.
func RunBehaviour(t *testing.T, b Backend) {
	for _, name := range behaviourCases {
		tc, ok := caseNamed(name)
		if !ok {
			t.Fatalf("conformance: behaviour case %s is not in the suite", name)
		}
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, &env{World: roomWorld{b.NewRoom(t)}, mech: b.Mechanism()})
		})
	}
}

func caseNamed(name string) (testCase, bool) {
	for _, tc := range cases {
		if tc.name == name {
			return tc, true
		}
	}
	return testCase{}, false
}

// roomWorld is a Room seen as a World, for the cases: behaviour cases
// use only its Dir and Spawn.
type roomWorld struct{ Room }

func (roomWorld) FS() lockfs.FS              { return nil }
func (roomWorld) Now() time.Time             { return time.Now() }
func (roomWorld) Advance(time.Duration) bool { return false }

// harnessBackend is a Harness as a Backend: its worlds are rooms. Run
// runs the behaviour cases of a Harness itself; this package's tests run
// them through RunBehaviour too.
type harnessBackend struct{ Harness }

func (h harnessBackend) NewRoom(t *testing.T) Room { return h.New(t) }

// A process that holds a lock is refused a second acquisition of it,
// which names the process itself; a second that waits gives up when its
// context ends, and is handed the lock when the first lets go.
func testSameProcessTurns(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	wantHolder(t, mustBeHeld(t, a, c.lock()), a.Identity())
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := a.Acquire(ctx, c.lock(), proclock.Options{Wait: true}); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("a second, waiting Acquire in the holder with an expiring context = %v; want an error matching context.DeadlineExceeded", err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Acquire(testContext(t), c.lock(), proclock.Options{Wait: true}) }()
	mustRelease(t, a, c.lock())
	if err := <-done; err != nil {
		t.Fatalf("the waiting acquisition, after the first let go: %v", err)
	}
	wantHolder(t, mustBeHeld(t, b, c.lock()), a.Identity())
	mustRelease(t, a, c.lock())
	mustAcquire(t, b, c.lock(), proclock.Options{})
	mustRelease(t, b, c.lock())
}

// A wait that is cancelled returns an error matching context.Canceled and
// leaves nothing that holds or queues: once the holder lets go, another
// process takes the lock without waiting.
func testWaitCancelled(t *testing.T, c *env) {
	a, b, third := c.Spawn(t), c.Spawn(t), c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- b.Acquire(ctx, c.lock(), proclock.Options{Wait: true}) }()
	// Whether b is already waiting or not, the cancellation must end it.
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		if err == nil {
			b.Release(c.lock())
		}
		t.Fatalf("cancelled wait = %v; want an error matching context.Canceled", err)
	}
	mustRelease(t, a, c.lock())
	mustAcquire(t, third, c.lock(), proclock.Options{})
	wantHolder(t, mustBeHeld(t, b, c.lock()), third.Identity())
	mustRelease(t, third, c.lock())
}
