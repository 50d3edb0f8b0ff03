package proclock_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// kernelWaits counts the lock requests /proc/locks shows blocked on the
// file at path: waiters asleep in the kernel's queue for it.
func kernelWaits(t *testing.T, path string) int {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Stat(path, &st); err != nil {
		t.Fatal(err)
	}
	// /proc/locks names a file by major:minor:inode, the device in hex.
	dev := fmt.Sprintf(":%d ", st.Ino)
	f, err := os.Open("/proc/locks")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	n := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if strings.Contains(line, "->") && strings.Contains(line+" ", dev) {
			n++
		}
	}
	return n
}

// untilKernelWaits yields until n requests are blocked on path.
func untilKernelWaits(t *testing.T, path string, n int) {
	t.Helper()
	for kernelWaits(t, path) != n {
		runtime.Gosched()
	}
}

// TestWaiterQueuesInKernel: a waiting Acquire of the SQLite mechanism
// sleeps in the kernel's lock queue (a blocked request in /proc/locks),
// and takes the lock when its holder is killed, with no wake-up source
// (p.Wake nil: nothing else could wake it before its back-off).
func TestWaiterQueuesInKernel(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.lock")
	holder := locktest.Start(t, handoffHolder.Command(string(proclock.MechanismSQLite), path))
	if line, err := holder.Line(); err != nil || line != "held" {
		t.Fatalf("holder: %q, %v", line, err)
	}
	p := platform.Native()
	p.Wake = nil
	got := make(chan error, 1)
	go func() {
		l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{Wait: true})
		if err == nil {
			err = l.Release()
		}
		got <- err
	}()
	untilKernelWaits(t, path, 1)
	holder.Kill()
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
}

// TestCancelledKernelWaitLetsGo: a waiter whose ctx ends while it sleeps
// in the kernel's queue returns at once, with ctx's error and the holder
// it waited for; its request stays queued until granted, and is let go of
// then, never held. Meanwhile this process's own Acquire says the lock is
// held by the other process (not by itself), and a second wait of this
// process joins no second request. Once the holder lets go, another
// process takes the lock.
func TestCancelledKernelWaitLetsGo(t *testing.T) {
	path := filepath.Join(t.TempDir(), "q.lock")
	holder := locktest.Start(t, handoffHolder.Command(string(proclock.MechanismSQLite), path))
	if line, err := holder.Line(); err != nil || line != "held" {
		t.Fatalf("holder: %q, %v", line, err)
	}
	p := platform.Native()
	ctx, cancel := context.WithCancel(context.Background())
	got := make(chan error, 1)
	go func() {
		_, err := proclock.Acquire(ctx, p, path, proclock.Options{Wait: true})
		got <- err
	}()
	untilKernelWaits(t, path, 1)
	cancel()
	err := <-got
	if !errors.Is(err, context.Canceled) || !errors.Is(err, proclock.ErrHeld) {
		t.Fatalf("cancelled wait = %v; want context.Canceled and ErrHeld", err)
	}
	if he, ok := errors.AsType[*proclock.HeldError](err); !ok || he.Holder == nil || he.Holder.PID != holder.Pid() {
		t.Fatalf("cancelled wait = %v; want held by pid %d", err, holder.Pid())
	}
	_, err = proclock.Acquire(context.Background(), p, path, proclock.Options{})
	if he, ok := errors.AsType[*proclock.HeldError](err); !ok || he.Holder == nil || he.Holder.PID != holder.Pid() {
		t.Fatalf("Acquire beside the parked wait = %v; want held by pid %d", err, holder.Pid())
	}
	// A second wait of this process queues behind its own parked one in
	// memory, not in the kernel.
	ctx2, cancel2 := context.WithCancel(context.Background())
	second := make(chan error, 1)
	go func() {
		_, err := proclock.Acquire(ctx2, p, path, proclock.Options{Wait: true})
		second <- err
	}()
	if n := kernelWaits(t, path); n != 1 {
		t.Fatalf("%d requests queued in the kernel; want the parked one", n)
	}
	cancel2()
	if err := <-second; !errors.Is(err, context.Canceled) {
		t.Fatalf("second wait = %v; want context.Canceled", err)
	}
	holder.Kill()
	next := locktest.Start(t, handoffHolder.Command(string(proclock.MechanismSQLite), path))
	if line, err := next.Line(); err != nil || line != "held" {
		t.Fatalf("next holder: %q, %v", line, err)
	}
	if n := kernelWaits(t, path); n != 0 {
		t.Fatalf("%d requests still queued once another holds; want none", n)
	}
	next.Kill()
	l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{Wait: true})
	if err != nil {
		t.Fatalf("Acquire after the parked wait let go: %v", err)
	}
	l.Release()
}
