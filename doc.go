// Package proclock gives a program one running instance per machine: the
// holder of the lock at a path is the only holder among all processes of
// the host, and among all goroutines of its own process.
//
// Where the platform has SQLite, the lock is an exclusive SQLite lock that
// the kernel drops when its holder exits: nothing is ever reclaimed.
// Elsewhere (wasip1, js) it is a lock file stamped with its holder's
// identity, reclaimed only when that holder is dead for certain. Either
// way the holder is named. Everything reaches the world through a
// platform.Platform: platform.Native(), or a fake world in tests.
//
//	lock, err := proclock.Acquire(ctx, platform.Native(), "myapp.lock", proclock.Options{})
//	if errors.Is(err, proclock.ErrHeld) {
//		var held *proclock.HeldError
//		errors.As(err, &held)
//		log.Fatalf("already running: %v", held.Holder)
//	}
//	if err != nil {
//		log.Fatal(err)
//	}
//	defer lock.Release()
//
// Acquisitions of one lock inside a process take turns, first come, first
// served; a waiting one (Options.Wait) is cancelled through its context.
package proclock
