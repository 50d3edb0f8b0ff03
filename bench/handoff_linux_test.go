package bench

import (
	"context"
	"flag"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// arrivals are the moments a waiter comes, before the holder lets go:
// settled into its wait (100–200 ms before, past any first attempt), or
// shortly before, while its first attempt is still going on. "kill" is a
// settled waiter whose holder is SIGKILLed instead of releasing.
var arrivals = []struct {
	name    string
	before  func() time.Duration
	killing bool
}{
	{"settled", settledDelay, false},
	{"arrive-20ms", func() time.Duration { return 20 * time.Millisecond }, false},
	{"arrive-2ms", func() time.Duration { return 2 * time.Millisecond }, false},
	{"kill", settledDelay, true},
}

func settledDelay() time.Duration { return 100*time.Millisecond + rand.N(100*time.Millisecond) }

// BenchmarkHandoff: from the holder letting go (the moment before its
// Release, or before its SIGKILL) to the waiter holding the lock, the
// median and 99th percentile as µs-median and µs-p99. The holder is a
// helper process; the waiter is this process, with the native platform
// (proclock's wake-up source included), or blocked in flock(2) for the
// kernel's own queue. See samples for how many handoffs each case takes.
func BenchmarkHandoff(b *testing.B) {
	for _, kind := range waitKinds {
		for _, arrival := range arrivals {
			b.Run(kind+"/"+arrival.name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "app.lock")
				var keeper *helper // releases, then takes again for the next sample
				if !arrival.killing {
					keeper = startHelper(b, "hold", kind, path)
				}
				took := collect(b, func() time.Duration {
					h := keeper
					if arrival.killing {
						h = startHelper(b, "hold", kind, path)
					}
					return handoff(b, kind, path, h, arrival.before(), arrival.killing)
				})
				reportLatency(b, took)
			})
		}
	}
}

// handoff has h take the lock, starts a waiter, lets go of the lock the
// given time after the waiter started, and returns how long the waiter took
// to hold it from then.
func handoff(b *testing.B, kind, path string, h *helper, before time.Duration, killing bool) time.Duration {
	h.say("take")
	h.expect("held")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	started, got := make(chan struct{}), make(chan int64, 1)
	go func() {
		close(started)
		release, err := take(ctx, kind, path, true)
		at := mono()
		if err != nil {
			b.Error(err)
			got <- 0
			return
		}
		if err := release(); err != nil {
			b.Error(err)
		}
		got <- at
	}()
	<-started
	// Not waiting for anything: this places the release at a chosen
	// moment of the waiter's wait.
	time.Sleep(before)
	var from int64
	if killing {
		from = mono()
		h.kill()
	} else {
		h.say("release")
		from = h.expect("released")[0]
	}
	at := <-got
	if at == 0 {
		b.FailNow()
	}
	return time.Duration(at - from)
}

// defaultSamples is how many handoffs a case takes at least, unless
// -benchtime says a count (-benchtime 100x: 100) or -short is set: enough
// for a p99 that is not the maximum.
const defaultSamples = 100

// collect gathers one sample per b.Loop iteration, then more, up to
// defaultSamples, unless the run asked for a count.
func collect(b *testing.B, sample func() time.Duration) []time.Duration {
	var took []time.Duration
	for b.Loop() {
		took = append(took, sample())
	}
	if !testing.Short() && !benchtimeIsCount() {
		for len(took) < defaultSamples {
			took = append(took, sample())
		}
	}
	return took
}

// benchtimeIsCount tells whether -benchtime is a count (10x), not a time.
func benchtimeIsCount() bool {
	f := flag.Lookup("test.benchtime")
	return f != nil && strings.HasSuffix(f.Value.String(), "x")
}

// reportLatency reports the median and p99 of took, and no ns/op: an
// iteration's time is mostly the chosen wait before the release.
func reportLatency(b *testing.B, took []time.Duration) {
	slices.Sort(took)
	b.ReportMetric(0, "ns/op")
	b.ReportMetric(float64(quantile(took, 0.5).Nanoseconds())/1e3, "µs-median")
	b.ReportMetric(float64(quantile(took, 0.99).Nanoseconds())/1e3, "µs-p99")
	b.ReportMetric(float64(len(took)), "samples")
}

// quantile is the q-quantile of sorted (nearest rank).
func quantile(sorted []time.Duration, q float64) time.Duration {
	i := int(q*float64(len(sorted))+0.999999) - 1
	return sorted[max(0, min(i, len(sorted)-1))]
}
