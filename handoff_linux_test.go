package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// handoffHolder, given a mechanism and a path, is a holder for
// BenchmarkHandoff: it takes the lock, says "held", and keeps it until it
// is killed.
var handoffHolder = locktest.NewRole("handoff-holder", func(args []string) int {
	return holdUntilKilled(proclock.Mechanism(args[0]), args[1])
})

func holdUntilKilled(mech proclock.Mechanism, path string) int {
	if _, err := proclock.Acquire(context.Background(), nativePlatform(mech), path, proclock.Options{}); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("held")
	select {} // until killed
}

// BenchmarkHandoff measures how long a waiting Acquire takes to hold a lock
// after its holder lets go, with the native wake-up source (inotify,
// pidfd) and without it (the back-off alone, p.Wake = nil): the median and
// 90th percentile from the release, or the SIGKILL of a holder process, to
// the waiter's Acquire returning, as µs-median and µs-p90. Each handoff
// happens at a random moment 100–200 ms after the waiter first sleeps,
// when it pauses between attempts. The release cases also report the CPU this whole process uses
// while one waiter waits 2 s for a lock that stays held, as %cpu-waiting
// (percent of one core), and what it uses doing nothing for as long, as
// %cpu-idle. Run with a fixed count, for example:
//
//	go test -run '^$' -bench Handoff -benchtime 100x
func BenchmarkHandoff(b *testing.B) {
	for _, mech := range mechanisms {
		for _, end := range []string{"release", "kill"} {
			for _, wake := range []bool{true, false} {
				name := fmt.Sprintf("%s/%s/sleep", mech, end)
				if wake {
					name = fmt.Sprintf("%s/%s/wake", mech, end)
				}
				b.Run(name, func(b *testing.B) {
					waiter := nativePlatform(mech)
					if waiter.Wake == nil {
						b.Fatal("no native wake-up source")
					}
					// Told of the waiter's first sleep: in its first
					// attempt (SQLite's busy timeout) or its first pause.
					pauses := make(chan struct{}, 1)
					waiter.Clock = leakPauseClock{Clock: waiter.Time(), pauses: pauses}
					if wake {
						waiter.Wake = leakPauseWaker{Waker: waiter.Wake, pauses: pauses}
					} else {
						waiter.Wake = nil
					}
					path := filepath.Join(b.TempDir(), "app.lock")
					var hold func(b *testing.B) (end func())
					if end == "release" {
						hold = holdInProcess(mech, path)
					} else {
						hold = holdInChild(mech, path)
					}
					var took []time.Duration
					for b.Loop() {
						took = append(took, handoff(b, waiter, path, pauses, hold))
					}
					slices.Sort(took)
					b.ReportMetric(0, "ns/op")
					b.ReportMetric(float64(took[len(took)/2].Nanoseconds())/1e3, "µs-median")
					b.ReportMetric(float64(took[len(took)*9/10].Nanoseconds())/1e3, "µs-p90")
					if end == "release" {
						b.ReportMetric(waitingCPU(b, waiter, path, hold), "%cpu-waiting")
						b.ReportMetric(idleCPU(b), "%cpu-idle")
					}
				})
			}
		}
	}
}

// holdInProcess holds path through a platform of its own (its own turns,
// as another process's), and lets go by Release.
func holdInProcess(mech proclock.Mechanism, path string) func(b *testing.B) func() {
	p := nativePlatform(mech)
	p.FS = withRanges(&distinctFS{p.FS}, p.FS)
	if p.SQLite != nil {
		p.SQLite = &distinctSQLite{p.SQLite}
	}
	return func(b *testing.B) func() {
		l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
		if err != nil {
			b.Fatal(err)
		}
		return func() {
			if err := l.Release(); err != nil {
				b.Fatal(err)
			}
		}
	}
}

// holdInChild holds path in a child process, and lets go by SIGKILL.
func holdInChild(mech proclock.Mechanism, path string) func(b *testing.B) func() {
	return func(b *testing.B) func() {
		cmd := handoffHolder.Command(string(mech), path)
		cmd.Stderr = os.Stderr
		c := locktest.Start(b, cmd)
		if line, err := c.Line(); err != nil || line != "held" {
			b.Fatalf("holder process: %q, %v", line, err)
		}
		return func() {
			c.Cmd.Process.Signal(syscall.SIGKILL)
			go c.Wait() // reaped in the background: a zombie holds nothing
		}
	}
}

// handoff makes the lock held, starts a waiter, lets go at a random moment
// of its wait, and returns how long the waiter took to hold the lock.
func handoff(b *testing.B, waiter *platform.Platform, path string, pauses chan struct{}, hold func(*testing.B) func()) time.Duration {
	letGo := hold(b)
	drain(pauses)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	got := make(chan time.Time, 1)
	go func() {
		l, err := proclock.Acquire(ctx, waiter, path, proclock.Options{Wait: true})
		at := time.Now()
		if err != nil {
			b.Error(err)
		} else {
			l.Release()
		}
		got <- at
	}()
	<-pauses
	// Not waiting for anything: this places the handoff at a random
	// moment of the waiter's back-off, past its first attempt (SQLite's
	// busy timeout and retries take 85 ms at most).
	time.Sleep(100*time.Millisecond + rand.N(100*time.Millisecond))
	start := time.Now()
	letGo()
	return (<-got).Sub(start)
}

// waitingCPU returns the CPU this process uses, in percent of one core,
// while waiter waits 2 s for path, held all along.
func waitingCPU(b *testing.B, waiter *platform.Platform, path string, hold func(*testing.B) func()) float64 {
	letGo := hold(b)
	defer letGo()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	cpu0, wall0 := processCPU(b), time.Now()
	_, err := proclock.Acquire(ctx, waiter, path, proclock.Options{Wait: true})
	cpu, wall := processCPU(b)-cpu0, time.Since(wall0)
	if !errors.Is(err, context.DeadlineExceeded) {
		b.Fatalf("waiting for a held lock: %v", err)
	}
	return 100 * cpu.Seconds() / wall.Seconds()
}

// idleCPU returns the CPU this process uses, in percent of one core, over
// 2 s of doing nothing: what waitingCPU counts besides the waiter.
func idleCPU(b *testing.B) float64 {
	cpu0, wall0 := processCPU(b), time.Now()
	time.Sleep(2 * time.Second) // the measurement itself: nothing is awaited
	return 100 * (processCPU(b) - cpu0).Seconds() / time.Since(wall0).Seconds()
}

// processCPU is the user and system time this process has used.
func processCPU(tb testing.TB) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		tb.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
