package proclock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// countFDs counts this process's open descriptors.
func countFDs(b *testing.B) int {
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		b.Fatal(err)
	}
	return len(ents)
}

// cpuTime is the CPU time this process has used, user and system.
func cpuTime(b *testing.B) time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkWatched1000: 1000 locks held at once and watched for their loss
// (Lost called on each): what the watch costs each in resident memory, Go
// heap, goroutines and descriptors beside an unwatched held lock
// (BenchmarkHold1000), the descriptors the process opens for all of them
// (once, kept), and the CPU the process uses while they sit idle for a
// second (cpu-us/s: microseconds per second, for all 1000), beside the
// same second before they are watched (cpu-us/s-unwatched).
func BenchmarkWatched1000(b *testing.B) {
	const n = 1000
	for _, mech := range mechanisms {
		b.Run(string(mech), func(b *testing.B) {
			p := nativePlatform(mech)
			dir := b.TempDir()
			ctx := context.Background()
			locks := make([]*proclock.Lock, n)
			var rss, heap, gor, fds, idle, idleBefore float64
			for b.Loop() {
				for i := range locks {
					l, err := proclock.Acquire(ctx, p, filepath.Join(dir, fmt.Sprintf("lock-%d", i)), proclock.Options{})
					if err != nil {
						b.Fatal(err)
					}
					locks[i] = l
				}
				c0 := cpuTime(b)
				time.Sleep(time.Second) // idle, unwatched: the baseline
				idleBefore = float64(cpuTime(b)-c0) / float64(time.Microsecond)
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				rss0, g0, fd0 := rssBytes(b), runtime.NumGoroutine(), countFDs(b)
				for _, l := range locks {
					l.Lost()
				}
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				rss = max(rss, float64(rssBytes(b)-rss0))
				heap = max(heap, float64(int64(after.HeapInuse)-int64(before.HeapInuse)))
				gor, fds = float64(runtime.NumGoroutine()-g0), max(fds, float64(countFDs(b)-fd0))
				c0 = cpuTime(b)
				time.Sleep(time.Second) // idle: nothing changes
				idle = float64(cpuTime(b)-c0) / float64(time.Microsecond)
				for _, l := range locks {
					if err := l.Release(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(rss/n/1024, "RSS-KiB/lock")
			b.ReportMetric(heap/n/1024, "heap-KiB/lock")
			b.ReportMetric(gor/n, "goroutines/lock")
			b.ReportMetric(fds, "fds-in-all")
			b.ReportMetric(idle, "cpu-us/s")
			b.ReportMetric(idleBefore, "cpu-us/s-unwatched")
		})
	}
}

// BenchmarkAcquireWatchRelease: BenchmarkAcquireRelease with Lost called
// on each lock: what starting and ending the watch adds to a cycle.
func BenchmarkAcquireWatchRelease(b *testing.B) {
	for _, mech := range mechanisms {
		b.Run(string(mech), func(b *testing.B) {
			p := nativePlatform(mech)
			path := filepath.Join(b.TempDir(), "bench.lock")
			cycleWatched(b, p, path)
		})
	}
}

// cycleWatched is the loop of the watch's cycle benchmarks: Acquire,
// start the watch (Lost), Release.
func cycleWatched(b *testing.B, p *platform.Platform, path string) {
	b.Helper()
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
		if err != nil {
			b.Fatal(err)
		}
		l.Lost()
		if err := l.Release(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAcquireWatchReleaseSymlinked: BenchmarkAcquireWatchRelease of
// a lock reached through a symlinked directory (current -> v1), whose
// symlink the watch watches too (a flip is a loss).
func BenchmarkAcquireWatchReleaseSymlinked(b *testing.B) {
	for _, mech := range mechanisms {
		b.Run(string(mech), func(b *testing.B) {
			p := nativePlatform(mech)
			top := b.TempDir()
			if err := os.Mkdir(filepath.Join(top, "v1"), 0o755); err != nil {
				b.Fatal(err)
			}
			if err := os.Symlink("v1", filepath.Join(top, "current")); err != nil {
				b.Fatal(err)
			}
			path := filepath.Join(top, "current", "bench.lock")
			cycleWatched(b, p, path)
		})
	}
}
