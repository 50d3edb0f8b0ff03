package proclock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/proclock/proclock"
)

// rssBytes reads this process's resident set size.
func rssBytes(b *testing.B) int64 {
	data, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		b.Fatal(err)
	}
	fields := strings.Fields(string(data))
	pages, err := strconv.ParseInt(fields[1], 10, 64)
	if err != nil {
		b.Fatal(err)
	}
	return pages * int64(os.Getpagesize())
}

// BenchmarkHold1000: 1000 locks held at once by one process, and what each
// costs in resident memory and Go heap.
func BenchmarkHold1000(b *testing.B) {
	const n = 1000
	for _, mech := range mechanisms {
		b.Run(string(mech), func(b *testing.B) {
			p := nativePlatform(mech)
			dir := b.TempDir()
			ctx := context.Background()
			paths := make([]string, n)
			for i := range paths {
				paths[i] = filepath.Join(dir, fmt.Sprintf("lock-%d", i))
			}
			var rss, heap int64
			locks := make([]*proclock.Lock, n)
			for b.Loop() {
				runtime.GC()
				var before runtime.MemStats
				runtime.ReadMemStats(&before)
				rss0 := rssBytes(b)
				for i, path := range paths {
					l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
					if err != nil {
						b.Fatal(err)
					}
					locks[i] = l
				}
				runtime.GC()
				var after runtime.MemStats
				runtime.ReadMemStats(&after)
				rss = max(rss, rssBytes(b)-rss0)
				heap = max(heap, int64(after.HeapInuse)-int64(before.HeapInuse))
				for _, l := range locks {
					if err := l.Release(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(rss)/n/1024, "RSS-KiB/lock")
			b.ReportMetric(float64(heap)/n/1024, "heap-KiB/lock")
		})
	}
}
