package bench

import (
	"fmt"
	"strconv"
	"testing"
)

// heldMany are how many locks one process holds at once: 1000 and 10,000
// (100 under -short), so that per-lock figures at both tell whether
// anything grows worse than linearly.
func heldMany() []int {
	if testing.Short() {
		return []int{100}
	}
	return []int{1000, 10000}
}

// BenchmarkHoldMany: a helper process holds N locks at once (past one
// taken and released first); the growth of its VmRSS, Go heap,
// descriptors and goroutines, per lock (RSS-KiB/lock, heap-KiB/lock,
// fds/lock, goroutines/lock), and the median time of one Acquire+Release
// of another lock before the N are taken (µs-acquire-at-0) and while they
// are held (µs-acquire-held). gofrs/flock, one open file a lock, is the
// floor.
func BenchmarkHoldMany(b *testing.B) {
	for _, kind := range []string{kindSQLite, kindFile, kindGofrs} {
		for _, n := range heldMany() {
			b.Run(fmt.Sprintf("%s/%d", kind, n), func(b *testing.B) {
				var got []int64
				oneRound(b, func() {
					got = startHelper(b, "rss", kind, b.TempDir(), strconv.Itoa(n)).expect("rss")
				})
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(got[0])/float64(n)/1024, "RSS-KiB/lock")
				b.ReportMetric(float64(got[1])/float64(n)/1024, "heap-KiB/lock")
				b.ReportMetric(float64(got[2])/float64(n), "fds/lock")
				b.ReportMetric(float64(got[3])/float64(n), "goroutines/lock")
				b.ReportMetric(float64(got[4])/1e3, "µs-acquire-at-0")
				b.ReportMetric(float64(got[5])/1e3, "µs-acquire-held")
			})
		}
	}
}
