package proclock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// gcHolder, given a mechanism and a path, is a daemon that takes the lock
// without keeping the *Lock, runs the garbage collector over and over,
// and then waits on stdin.
var gcHolder = locktest.NewRole("gc-holder", func(args []string) int {
	if _, err := proclock.Acquire(context.Background(), nativePlatform(proclock.Mechanism(args[0])), args[1], proclock.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	collectGarbage()
	fmt.Println("collected")
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
})

// collectGarbage runs the collector several times, with allocation in
// between, so that anything unreachable is finalized.
func collectGarbage() {
	var keep [][]byte
	for i := range 10 {
		for range 1000 {
			keep = append(keep, make([]byte, 1024))
		}
		keep = keep[:i]
		runtime.GC()
	}
	runtime.KeepAlive(keep)
}

// TestDroppedLockStaysHeldNative: a daemon that takes the lock for its
// whole life and keeps no reference to it still holds it after many
// garbage collections, as seen from another process, with either
// mechanism, and by a process of either mechanism.
func TestDroppedLockStaysHeldNative(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
		t.Run(string(mech), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "daemon.lock")
			cmd := gcHolder.Command(string(mech), path)
			cmd.Stderr = os.Stderr
			c := locktest.Start(t, cmd)
			defer c.End()
			if line, err := c.Line(); err != nil || line != "collected" {
				t.Fatalf("daemon said %q, %v", line, err)
			}
			for _, other := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
				p := nativePlatform(other)
				if held, err := proclock.IsHeld(context.Background(), p, path); err != nil || !held {
					t.Fatalf("%s: IsHeld after the daemon's collections = %v, %v; want held", other, held, err)
				}
				l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
				if err == nil {
					l.Release()
					t.Fatalf("%s: took the lock of a daemon that dropped its *Lock", other)
				}
				if he, ok := errors.AsType[*proclock.HeldError](err); !ok || he.Holder == nil || he.Holder.PID != c.Pid() {
					t.Fatalf("%s: Acquire = %v; want held by pid %d", other, err, c.Pid())
				}
			}
		})
	}
}

// gcWaiter, given a mechanism and a path, is a daemon that says
// "waiting", waits for the lock, keeps no reference to the *Lock it gets,
// runs the garbage collector over and over, says "collected", and then
// waits on stdin.
var gcWaiter = locktest.NewRole("gc-waiter", func(args []string) int {
	path := args[1]
	fmt.Println("waiting")
	if _, err := proclock.Acquire(context.Background(), nativePlatform(proclock.Mechanism(args[0])), path, proclock.Options{Wait: true}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	collectGarbage()
	fmt.Println("collected")
	bufio.NewReader(os.Stdin).ReadString('\n')
	return 0
})

// TestDroppedWaitedLockStaysHeldNative: a daemon that waited for its lock
// and keeps no reference to the *Lock still holds it after many garbage
// collections, as seen from another process.
func TestDroppedWaitedLockStaysHeldNative(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "daemon.lock")
			holder := locktest.Start(t, handoffHolder.Command(string(mech), path))
			if line, err := holder.Line(); err != nil || line != "held" {
				t.Fatalf("holder process: %q, %v", line, err)
			}
			cmd := gcWaiter.Command(string(mech), path)
			cmd.Stderr = os.Stderr
			c := locktest.Start(t, cmd)
			defer c.End()
			if line, err := c.Line(); err != nil || line != "waiting" {
				t.Fatalf("daemon said %q, %v; want waiting", line, err)
			}
			holder.Kill()
			if line, err := c.Line(); err != nil || line != "collected" {
				t.Fatalf("daemon said %q, %v", line, err)
			}
			p := nativePlatform(mech)
			if held, err := proclock.IsHeld(context.Background(), p, path); err != nil || !held {
				t.Fatalf("IsHeld after the daemon's collections = %v, %v; want held", held, err)
			}
			l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
			if err == nil {
				l.Release()
				t.Fatal("took the lock of a daemon that dropped the *Lock it waited for")
			}
			if he, ok := errors.AsType[*proclock.HeldError](err); !ok || he.Holder == nil || he.Holder.PID != c.Pid() {
				t.Fatalf("Acquire = %v; want held by pid %d", err, c.Pid())
			}
		})
	}
}
