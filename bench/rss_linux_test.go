package bench

import (
	"strconv"
	"testing"
)

// heldMany is how many locks one process holds at once (100 under -short).
func heldMany() int {
	if testing.Short() {
		return 100
	}
	return 1000
}

// BenchmarkHoldMany: a helper process holds 1000 locks at once (past one
// taken and released first); the growth of its VmRSS and Go heap, per
// lock, as RSS-KiB/lock and heap-KiB/lock. gofrs/flock, one open file a
// lock, is the floor.
func BenchmarkHoldMany(b *testing.B) {
	for _, kind := range []string{kindSQLite, kindFile, kindGofrs} {
		b.Run(kind, func(b *testing.B) {
			n := heldMany()
			var got []int64
			oneRound(b, func() {
				got = startHelper(b, "rss", kind, b.TempDir(), strconv.Itoa(n)).expect("rss")
			})
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(got[0])/float64(n)/1024, "RSS-KiB/lock")
			b.ReportMetric(float64(got[1])/float64(n)/1024, "heap-KiB/lock")
		})
	}
}
