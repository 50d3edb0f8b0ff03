package bench

import (
	"fmt"
	"path/filepath"
	"testing"
	"time"
)

// BenchmarkWaitingCPU: the CPU a waiter process uses while it waits for a
// lock that stays held, 2 s (300 ms under -short), from its own rusage, as
// %cpu-waiting: percent of one core.
func BenchmarkWaitingCPU(b *testing.B) {
	wait := 2 * time.Second
	if testing.Short() {
		wait = 300 * time.Millisecond
	}
	for _, kind := range waitKinds {
		b.Run(kind, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "app.lock")
			holding(b, kind, path)
			var pct float64
			oneRound(b, func() {
				got := startHelper(b, "waitcpu", kind, path, wait.String()).expect("cpu")
				pct = 100 * float64(got[0]) / float64(got[1])
			})
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(pct, "%cpu-waiting")
		})
	}
}

// herdSizes are how many processes wait on one lock, one run each (1
// and 4 under -short); each holds it 20 ms when its turn comes.
func herdSizes() []int {
	if testing.Short() {
		return []int{1, 4}
	}
	return []int{1, 4, 16}
}

const herdHold = 20 * time.Millisecond

// BenchmarkHerd: N waiter processes (1, 4, 16) on one lock, settled into
// their wait; then the holder lets go and the lock passes through all of
// them, each holding it 20 ms. Each waiter counts the CPU it burns from
// the first release until it holds the lock (its own acquisition
// included). Reports their sum per release as cpu-µs/release, and that
// over the 20 ms between releases as %cpu-herd: what the waiters cost the
// machine, in percent of one core, while the lock changes hands every
// 20 ms. Run it with -benchtime 1x: one pass through the herd.
func BenchmarkHerd(b *testing.B) {
	for _, kind := range waitKinds {
		for _, n := range herdSizes() {
			b.Run(fmt.Sprintf("%s/waiters=%d", kind, n), func(b *testing.B) {
				herdRun(b, kind, n)
			})
		}
	}
}

func herdRun(b *testing.B, kind string, n int) {
	path := filepath.Join(b.TempDir(), "app.lock")
	holder := holding(b, kind, path)
	herd := make([]*helper, n)
	for i := range herd {
		herd[i] = startHelper(b, "herd", kind, path, herdHold.String())
	}
	for _, h := range herd {
		h.expect("ready")
	}
	var burnt int64
	oneRound(b, func() {
		for _, h := range herd {
			h.say("go")
		}
		// Not waiting for anything: past every waiter's first attempt.
		time.Sleep(300 * time.Millisecond)
		for _, h := range herd {
			h.say("mark")
		}
		for _, h := range herd {
			h.expect("marked")
		}
		holder.say("release")
		holder.expect("released")
		for _, h := range herd {
			burnt += h.expect("done")[0]
		}
	})
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(burnt)/float64(n)/1e3, "cpu-µs/release")
	b.ReportMetric(100*float64(burnt)/float64(n)/float64(herdHold), "%cpu-herd")
	b.ReportMetric(float64(n), "waiters")
}
