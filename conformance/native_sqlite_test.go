package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/peer"
)

// A SQLite holder killed with SIGKILL lets a waiting process in at once:
// the kernel dropped the lock; nothing was reclaimed, the lock file is
// still the same empty file, and no journal was ever written.
func TestNativeSQLiteKilledHolderWaiter(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "app.lock")
	holder := peer.Spawn(t, proclock.MechanismSQLite)
	waiter := peer.Spawn(t, proclock.MechanismSQLite)
	if err := holder.Acquire(context.Background(), lock, proclock.Options{}); err != nil {
		t.Fatal(err)
	}
	before, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- waiter.Acquire(ctx, lock, proclock.Options{Wait: true}) }()
	// Make sure the waiter is waiting: it has met the holder.
	if held, err := waiter.IsHeld(ctx, lock); err != nil || !held {
		t.Fatalf("IsHeld from the waiter = %v, %v; want held", held, err)
	}
	killed := time.Now()
	holder.Kill()
	if err := <-done; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	took := time.Since(killed)
	t.Logf("kill to acquire: %v", took)
	if took > 1500*time.Millisecond {
		t.Errorf("the waiter took %v to get the lock after the holder was killed; want within 1.5 s", took)
	}
	after, err := os.Stat(lock)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || after.Size() != before.Size() || !after.ModTime().Equal(before.ModTime()) {
		t.Errorf("lock file replaced or written: same file %v, size %d", os.SameFile(before, after), after.Size())
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if _, err := os.Lstat(lock + suffix); err == nil {
			t.Errorf("%s exists", lock+suffix)
		}
	}
	if err := waiter.Release(lock); err != nil {
		t.Fatal(err)
	}
}

// RemoveOnRelease never lets two in: A holds and will remove the file on
// release; B waits (it may have opened, even locked, the old file); A
// releases; C arrives. Exactly one of B and C holds, round after round.
func TestNativeSQLiteRemoveOnReleaseRace(t *testing.T) {
	rounds := 200
	if testing.Short() {
		rounds = 20
	}
	lock := filepath.Join(t.TempDir(), "app.lock")
	a := peer.Spawn(t, proclock.MechanismSQLite)
	b := peer.Spawn(t, proclock.MechanismSQLite)
	c := peer.Spawn(t, proclock.MechanismSQLite)
	opts := proclock.Options{RemoveOnRelease: true}
	for round := range rounds {
		if err := a.Acquire(context.Background(), lock, opts); err != nil {
			t.Fatalf("round %d: A: %v", round, err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		bDone := make(chan error, 1)
		go func() { bDone <- b.Acquire(ctx, lock, proclock.Options{Wait: true, RemoveOnRelease: true}) }()
		if err := a.Release(lock); err != nil {
			t.Fatalf("round %d: A's release: %v", round, err)
		}
		cErr := c.Acquire(context.Background(), lock, opts)
		if cErr == nil {
			// C holds: B must give up without holding.
			cancel()
		}
		bErr := <-bDone
		cancel()
		switch {
		case bErr == nil && cErr == nil:
			t.Fatalf("round %d: B and C both hold the lock", round)
		case bErr != nil && cErr != nil:
			t.Fatalf("round %d: neither holds: B %v; C %v", round, bErr, cErr)
		}
		holder := b
		if cErr == nil {
			holder = c
		}
		// The file at the path is the one its holder locked: a fourth
		// look from A finds it held.
		if held, err := a.IsHeld(context.Background(), lock); err != nil || !held {
			t.Fatalf("round %d: IsHeld = %v, %v while one holds; want held (the holder locked a file no longer at the path?)", round, held, err)
		}
		if err := holder.Release(lock); err != nil {
			t.Fatalf("round %d: release: %v", round, err)
		}
	}
}
