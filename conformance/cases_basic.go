package conformance

import (
	"context"
	"errors"
	"io/fs"
	"path"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
)

// A lock has one holder; another process is told who it is; after release
// the lock can be taken again.
func testAcquireHeldRelease(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	wantHolder(t, mustBeHeld(t, b, c.lock()), a.Identity())
	mustRelease(t, a, c.lock())
	mustAcquire(t, b, c.lock(), proclock.Options{})
	wantHolder(t, mustBeHeld(t, a, c.lock()), b.Identity())
	mustRelease(t, b, c.lock())
	mustAcquire(t, a, c.lock(), proclock.Options{})
	mustRelease(t, a, c.lock())
}

// A holder that dies without releasing does not keep the lock: the next
// process takes it without waiting (SQLite: the kernel dropped it; file:
// the stamp's pid is gone, so the file is reclaimed).
func testDeadHolderReplaced(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	a.Kill()
	mustAcquire(t, b, c.lock(), proclock.Options{})
	wantHolder(t, mustBeHeld(t, c.Spawn(t), c.lock()), b.Identity())
	mustRelease(t, b, c.lock())
}

// A waiting Acquire gets the lock once its holder lets go.
func testWaitForRelease(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	done := make(chan error, 1)
	go func() { done <- b.Acquire(testContext(t), c.lock(), proclock.Options{Wait: true}) }()
	// Whether b is already waiting or not, it must end up holding.
	mustRelease(t, a, c.lock())
	if err := <-done; err != nil {
		t.Fatalf("waiting Acquire: %v", err)
	}
	wantHolder(t, mustBeHeld(t, a, c.lock()), b.Identity())
	mustRelease(t, b, c.lock())
}

// A wait that runs out returns an error matching its context's, and
// holds nothing afterwards.
func testWaitGivesUp(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	err := b.Acquire(ctx, c.lock(), proclock.Options{Wait: true})
	if !errors.Is(err, context.DeadlineExceeded) {
		if err == nil {
			b.Release(c.lock())
		}
		t.Fatalf("Acquire with an expiring context = %v; want an error matching context.DeadlineExceeded", err)
	}
	mustRelease(t, a, c.lock())
	third := c.Spawn(t)
	mustAcquire(t, third, c.lock(), proclock.Options{})
	mustRelease(t, third, c.lock())
}

// An already cancelled context returns at once and touches nothing.
func testCancelledBeforeStart(t *testing.T, c *env) {
	a := c.Spawn(t)
	before := c.snapshot(t)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := a.Acquire(ctx, c.lock(), proclock.Options{Wait: true})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire with a cancelled context = %v; want context.Canceled", err)
	}
	c.unchanged(t, before, "Acquire with a cancelled context")
	if _, err := a.IsHeld(ctx, c.lock()); !errors.Is(err, context.Canceled) {
		t.Fatalf("IsHeld with a cancelled context = %v; want context.Canceled", err)
	}
}

// IsHeld answers for a missing, held-elsewhere, held-here and released
// lock, and writes nothing, ever.
func testIsHeldWritesNothing(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	check := func(p Peer, want bool, when string) {
		t.Helper()
		before := c.snapshot(t)
		got, err := p.IsHeld(testContext(t), c.lock())
		if err != nil {
			t.Fatalf("IsHeld %s: %v", when, err)
		}
		if got != want {
			t.Fatalf("IsHeld %s = %v; want %v", when, got, want)
		}
		c.unchanged(t, before, "IsHeld "+when)
	}
	check(b, false, "on a missing lock")
	if c.exists(t, c.lock()) {
		t.Fatalf("IsHeld created %s", c.lock())
	}
	mustAcquire(t, a, c.lock(), proclock.Options{})
	check(b, true, "on a lock held elsewhere")
	check(a, true, "on a lock held here")
	mustRelease(t, a, c.lock())
	check(b, false, "after release")
}

// Inspect reports absent, held (with holder, time and mechanism) and the
// state after release, and writes nothing.
func testInspectStates(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	inspect := func(p Peer) proclock.Status {
		t.Helper()
		before := c.snapshot(t)
		st, err := p.Inspect(testContext(t), c.lock())
		if err != nil {
			t.Fatalf("Inspect: %v", err)
		}
		c.unchanged(t, before, "Inspect")
		if st.Mechanism != c.mech {
			t.Errorf("Inspect: mechanism %q; want %q", st.Mechanism, c.mech)
		}
		return st
	}
	if st := inspect(b); st.State != proclock.StateAbsent {
		t.Fatalf("Inspect on a missing lock: state %q; want absent", st.State)
	}
	mustAcquire(t, a, c.lock(), proclock.Options{})
	st := inspect(b)
	if st.State != proclock.StateHeld {
		t.Fatalf("Inspect on a held lock: state %q; want held", st.State)
	}
	wantHolder(t, st.Holder, a.Identity())
	if st.AcquiredAt.IsZero() || st.HeldFor < 0 {
		t.Errorf("Inspect on a held lock: acquired at %v, held for %v; want a time and a duration >= 0", st.AcquiredAt, st.HeldFor)
	}
	if st := inspect(a); st.State != proclock.StateHeld || !st.HeldHere || st.AcquiredAt.IsZero() {
		t.Errorf("Inspect by the holder: state %q, held here %v, acquired at %v; want held here, with a time", st.State, st.HeldHere, st.AcquiredAt)
	} else {
		wantHolder(t, st.Holder, a.Identity())
	}
	mustRelease(t, a, c.lock())
	want := proclock.StateAbsent
	if c.mech == proclock.MechanismSQLite {
		want = proclock.StateFree // the database file stays without RemoveOnRelease
	}
	if st := inspect(b); st.State != want {
		t.Fatalf("Inspect after release: state %q; want %q", st.State, want)
	}
}

// An empty path, a directory at the path and a missing parent directory
// are errors wrapping *fs.PathError, and create nothing.
func testBadInput(t *testing.T, c *env) {
	a := c.Spawn(t)
	dirAtPath := path.Join(c.Dir(), "adir")
	c.mkdir(t, dirAtPath)
	for _, tc := range []struct{ name, path string }{
		{"empty path", ""},
		{"directory at path", dirAtPath},
		{"missing parent", path.Join(c.Dir(), "missing", "app.lock")},
	} {
		before := c.snapshot(t)
		err := a.Acquire(testContext(t), tc.path, proclock.Options{})
		var pe *fs.PathError
		if !errors.As(err, &pe) {
			if err == nil {
				a.Release(tc.path)
			}
			t.Errorf("Acquire with %s = %v; want an error wrapping *fs.PathError", tc.name, err)
			continue
		}
		c.unchanged(t, before, "Acquire with "+tc.name)
		if _, err := a.IsHeld(testContext(t), tc.path); !errors.As(err, &pe) {
			t.Errorf("IsHeld with %s = %v; want an error wrapping *fs.PathError", tc.name, err)
		}
		c.unchanged(t, before, "IsHeld with "+tc.name)
	}
}

// A process that cannot read its own identity: the file mechanism cannot
// judge holders, so Acquire fails and creates nothing; SQLite takes the
// lock, with its holder unknown, and a mark that names no holder.
func testIdentityUnavailable(t *testing.T, c *env) {
	a, b := c.Spawn(t), c.Spawn(t)
	if !a.FailIdentity() {
		t.Skip("this harness cannot make a process lose its identity")
	}
	holderFile := c.lock() + ".holder"
	if c.mech == proclock.MechanismSQLite {
		// A .holder left by a holder that died must not name the new
		// one, nor keep it out: it names the file the new one locks.
		dead := c.Spawn(t)
		mustAcquire(t, dead, c.lock(), proclock.Options{})
		dead.Kill()
	}
	before := c.snapshot(t)
	err := a.Acquire(testContext(t), c.lock(), proclock.Options{})
	switch c.mech {
	case proclock.MechanismFile:
		if err == nil {
			t.Fatal("file mechanism: Acquire without identity succeeded")
		}
		c.unchanged(t, before, "a failed Acquire without identity")
		mustAcquire(t, b, c.lock(), proclock.Options{})
		mustRelease(t, b, c.lock())
	case proclock.MechanismSQLite:
		if err != nil {
			t.Fatalf("sqlite: Acquire without identity: %v", err)
		}
		// Its mark says "held, holder unknown", so that processes
		// without SQLite keep out too.
		if !c.exists(t, holderFile) {
			t.Fatal("sqlite: no .holder while held by a process without identity: file-mechanism processes would not keep out")
		}
		if r := lockrec.ReadHolder(c.FS(), c.lock()); r != nil {
			t.Fatalf("sqlite: .holder names %+v; want holder unknown", r.Identity)
		}
		if h := mustBeHeld(t, b, c.lock()); h != nil {
			t.Fatalf("sqlite: held error names %+v; want holder unknown", *h)
		}
		mustRelease(t, a, c.lock())
	}
}

// Several processes take over a dead holder's lock at once: exactly one
// gets it, round after round.
func testConcurrentTakeover(t *testing.T, c *env) {
	for round := range 3 {
		dead := c.Spawn(t)
		mustAcquire(t, dead, c.lock(), proclock.Options{})
		dead.Kill()
		peers := []Peer{c.Spawn(t), c.Spawn(t), c.Spawn(t), c.Spawn(t)}
		errs := race(peers, func(p Peer) error {
			return p.Acquire(testContext(t), c.lock(), proclock.Options{})
		})
		var winners []Peer
		for i, err := range errs {
			switch {
			case err == nil:
				winners = append(winners, peers[i])
			case !errors.Is(err, proclock.ErrHeld):
				t.Errorf("round %d: peer %d: %v; want held or success", round, i, err)
			}
		}
		if len(winners) != 1 {
			t.Fatalf("round %d: %d of 4 took the lock; want exactly 1:%s", round, len(winners), describe(errs))
		}
		mustRelease(t, winners[0], c.lock())
		for _, p := range peers {
			p.Kill()
		}
	}
}

// RemoveOnRelease leaves nothing of the lock behind.
func testRemoveOnRelease(t *testing.T, c *env) {
	a := c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{RemoveOnRelease: true})
	mustRelease(t, a, c.lock())
	for _, name := range []string{c.lock(), c.lock() + ".holder"} {
		if c.exists(t, name) {
			t.Errorf("%s exists after a release with RemoveOnRelease", name)
		}
	}
	b := c.Spawn(t)
	mustAcquire(t, b, c.lock(), proclock.Options{RemoveOnRelease: true})
	mustRelease(t, b, c.lock())
}
