package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// One instance per machine: take the lock at start, or say who runs.
func ExampleAcquire() {
	ctx := context.Background()
	lock, err := proclock.Acquire(ctx, platform.Native(), filepath.Join(os.TempDir(), "example-agent.lock"), proclock.Options{})
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		log.Fatalf("already running: %v", held.Holder)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release()
	// ... the program's work, alone on this machine ...
}

// Waiting for the holder, for at most a minute.
func ExampleAcquire_wait() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	lock, err := proclock.Acquire(ctx, platform.Native(), filepath.Join(os.TempDir(), "example-build.lock"), proclock.Options{Wait: true})
	if errors.Is(err, context.DeadlineExceeded) {
		log.Fatalf("gave up waiting: %v", err)
	}
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release()
}

// Testing code that takes a lock, in a fake world: a second process is
// told who holds the lock, and takes it once the holder dies.
func ExampleAcquire_fake() {
	ctx := context.Background()
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()

	if _, err := proclock.Acquire(ctx, a.Platform(), "/tmp/app.lock", proclock.Options{}); err != nil {
		log.Fatal(err)
	}
	_, err := proclock.Acquire(ctx, b.Platform(), "/tmp/app.lock", proclock.Options{})
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		fmt.Println("held by pid", held.Holder.PID)
	}

	a.Kill()
	lock, err := proclock.Acquire(ctx, b.Platform(), "/tmp/app.lock", proclock.Options{})
	fmt.Println("after the holder died:", err)
	lock.Release()
	// Output:
	// held by pid 100
	// after the holder died: <nil>
}

// Asking whether a lock is held, without taking it or writing anything.
func ExampleIsHeld() {
	ctx := context.Background()
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	held, _ := proclock.IsHeld(ctx, b.Platform(), "/tmp/app.lock")
	fmt.Println("before:", held)
	lock, _ := proclock.Acquire(ctx, a.Platform(), "/tmp/app.lock", proclock.Options{})
	held, _ = proclock.IsHeld(ctx, b.Platform(), "/tmp/app.lock")
	fmt.Println("while a holds it:", held)
	lock.Release()
	// Output:
	// before: false
	// while a holds it: true
}

// Inspect tells people and tools who holds a lock and for how long.
func ExampleInspect() {
	ctx := context.Background()
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	lock, _ := proclock.Acquire(ctx, a.Platform(), "/tmp/app.lock", proclock.Options{})
	defer lock.Release()
	w.Advance(90 * time.Second)
	st, err := proclock.Inspect(ctx, b.Platform(), "/tmp/app.lock")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s by pid %d for %v\n", st.State, st.Holder.PID, st.HeldFor)
	// Output:
	// held by pid 100 for 1m30s
}

// A stale lock file names why it is stale; the next Acquire reclaims it.
func ExampleInspect_stale() {
	ctx := context.Background()
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	p := a.Platform().WithoutSQLite() // the file mechanism, as on wasip1
	if _, err := proclock.Acquire(ctx, p, "/tmp/app.lock", proclock.Options{}); err != nil {
		log.Fatal(err)
	}
	a.Kill()
	q := b.Platform().WithoutSQLite()
	st, _ := proclock.Inspect(ctx, q, "/tmp/app.lock")
	fmt.Println(st.State, "-", st.Reason)
	// Output:
	// stale - pid gone
}

// A daemon that stops its work when its lock is lost (its file removed by
// a tmp cleaner, say), since another instance may be starting.
func ExampleLock_Lost() {
	ctx := context.Background()
	lock, err := proclock.Acquire(ctx, platform.Native(), filepath.Join(os.TempDir(), "example-daemon.lock"), proclock.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer lock.Release()
	work, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	go func() {
		select {
		case <-lock.Lost():
			stop(lock.Err()) // a *proclock.LostError, matching proclock.ErrLost
		case <-work.Done():
		}
	}()
	// ... the daemon's work, under work, until it ends ...
	<-work.Done()
	if errors.Is(context.Cause(work), proclock.ErrLost) {
		log.Printf("lock lost, stopping: %v", context.Cause(work))
	}
}
