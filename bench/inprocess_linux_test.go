package bench

import (
	"context"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// BenchmarkHandoffInProcess: a lock passed between two goroutines of this
// process, from the holder's Release to the waiting goroutine's Acquire
// returning (proclock's in-process turns), the waiter settled 1–2 ms into
// its wait; sync.Mutex is the floor. Median and p99 as in BenchmarkHandoff.
func BenchmarkHandoffInProcess(b *testing.B) {
	for _, kind := range []string{kindSQLite, kindFile, "sync.Mutex"} {
		b.Run(kind, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "app.lock")
			var mu sync.Mutex
			lock := func(wait bool) (func() error, error) {
				if kind == "sync.Mutex" {
					mu.Lock()
					return func() error { mu.Unlock(); return nil }, nil
				}
				return take(context.Background(), kind, path, wait)
			}
			took := collect(b, func() time.Duration {
				release, err := lock(false)
				if err != nil {
					b.Fatal(err)
				}
				started, got := make(chan struct{}), make(chan int64, 1)
				go func() {
					close(started)
					r, err := lock(true)
					at := mono()
					if err != nil {
						b.Error(err)
						got <- at
						return
					}
					if err := r(); err != nil {
						b.Error(err)
					}
					got <- at
				}()
				<-started
				// Not waiting for anything: the waiter settles into its wait.
				time.Sleep(time.Millisecond + time.Duration(mono()%int64(time.Millisecond)))
				from := mono()
				if err := release(); err != nil {
					b.Fatal(err)
				}
				return time.Duration(<-got - from)
			})
			reportLatency(b, took)
		})
	}
}
