package bench

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// contenders is how many processes contend; sections is how many critical
// sections each runs (fewer under -short).
const contenders = 4

func sections() int {
	if testing.Short() {
		return 100
	}
	return 2000
}

// BenchmarkContention: 4 helper processes each run 2000 critical sections
// (100 under -short) on one lock, waiting for it each time: read a counter
// file, add one, write it back. Reports the critical sections per second
// from "go" to the last process done, as ops/s, and the updates lost
// (the count short of 4 x 2000), as lost-updates: 0 unless two processes
// held the lock at once. One round per run, whatever -benchtime says.
func BenchmarkContention(b *testing.B) {
	for _, kind := range waitKinds {
		b.Run(kind, func(b *testing.B) {
			dir := b.TempDir()
			path, counter := filepath.Join(dir, "app.lock"), filepath.Join(dir, "counter")
			if err := os.WriteFile(counter, []byte("0"), 0o644); err != nil {
				b.Fatal(err)
			}
			n := sections()
			helpers := make([]*helper, contenders)
			for i := range helpers {
				helpers[i] = startHelper(b, "contend", kind, path, counter, strconv.Itoa(n))
			}
			for _, h := range helpers {
				h.expect("ready")
			}
			var took time.Duration
			oneRound(b, func() {
				start := time.Now()
				for _, h := range helpers {
					h.say("go")
				}
				for _, h := range helpers {
					h.expect("done")
				}
				took = time.Since(start)
			})
			data, err := os.ReadFile(counter)
			if err != nil {
				b.Fatal(err)
			}
			got, err := strconv.Atoi(string(data))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(float64(contenders*n)/took.Seconds(), "ops/s")
			b.ReportMetric(float64(contenders*n-got), "lost-updates")
		})
	}
}

// oneRound runs round once, in the first iteration of b.Loop, whatever
// -benchtime says: a round of processes is its own repetition.
func oneRound(b *testing.B, round func()) {
	done := false
	for b.Loop() {
		if !done {
			round()
			done = true
		}
	}
}
