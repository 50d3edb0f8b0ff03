package cli

import (
	"errors"
	"os"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// renewedLate is a lock found by a resumed proclock: its deadline is
// past when first asked, a renewal that came back after it moved the
// deadline on for every later ask, and the lock is lost.
type renewedLate struct {
	mu        sync.Mutex
	deadlines []time.Time // answers of Deadline, the last one repeated
	lost      chan struct{}
}

func (r *renewedLate) Lost() <-chan struct{} { return r.lost }
func (r *renewedLate) Err() error            { return errors.New("deadline passed") }
func (r *renewedLate) Deadline() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := r.deadlines[0]
	if len(r.deadlines) > 1 {
		r.deadlines = r.deadlines[1:]
	}
	return d
}

// TestLossResumedPastDeadlineKillsAtOnce: a proclock that wakes past its
// deadline (it was stopped) sends SIGKILL at once, even when a renewal
// came back since and the lock's deadline now lies ahead: it must not
// give COMMAND the grace (the reviewer saw COMMAND run on 0.29 s after
// SIGCONT), and its line says what it sent. Today's code sent SIGTERM
// first, whichever of the lost channel and the timer won.
func TestLossResumedPastDeadlineKillsAtOnce(t *testing.T) {
	for range 20 { // both select cases, as they come
		now := time.Now()
		lock := &renewedLate{deadlines: []time.Time{now.Add(-time.Second), now.Add(time.Hour)}, lost: make(chan struct{})}
		close(lock.lost)
		relay := make(chan os.Signal, 2)
		s := startLossStop(lock, 5*time.Second, relay)
		if sig := <-relay; sig != syscall.SIGKILL {
			t.Fatalf("first signal %v, want SIGKILL at once", sig)
		}
		why, how := s.finish(0)
		if why == "" || how != "SIGKILL at once, its deadline being past" {
			t.Fatalf("finish: %q, %q; want a cause and SIGKILL at once", why, how)
		}
	}
}

// TestLossTellsGrace: a loss by an event gives SIGTERM, and the line says
// SIGTERM then SIGKILL after the grace.
func TestLossTellsGrace(t *testing.T) {
	lock := &renewedLate{deadlines: []time.Time{{}}, lost: make(chan struct{})}
	close(lock.lost)
	relay := make(chan os.Signal, 2)
	s := startLossStop(lock, 300*time.Millisecond, relay)
	if sig := <-relay; sig != syscall.SIGTERM {
		t.Fatalf("first signal %v, want SIGTERM", sig)
	}
	if sig := <-relay; sig != syscall.SIGKILL {
		t.Fatalf("second signal %v, want SIGKILL", sig)
	}
	if _, how := s.finish(0); how != "SIGTERM, then SIGKILL after 300ms" {
		t.Fatalf("finish says %q", how)
	}
}

// renewing is a lock renewed at every turn of the loss stop: each ask of
// its deadline gives a later one, within the grace (so that the stop's
// timer fires at once), until turns asks have been made; then it keeps
// one deadline an hour past the grace, and the stop waits.
type renewing struct {
	mu    sync.Mutex
	asks  int
	turns int
	last  time.Time
	quiet chan struct{} // closed once the turns are done
}

func (r *renewing) Lost() <-chan struct{} { return nil }
func (r *renewing) Err() error            { return nil }
func (r *renewing) Deadline() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.asks++; r.asks < r.turns {
		r.last = r.last.Add(time.Nanosecond)
	} else if r.asks == r.turns {
		r.last = r.last.Add(3 * time.Hour)
		close(r.quiet)
	}
	return r.last
}

// TestLossStopTurnsKeepNothing: a turn of the loss stop (a renewal moved
// the deadline on) keeps nothing once it is over. Each turn of issue 29's
// code deferred its timer's Stop to the end of the stop's whole watch:
// about 300 bytes a turn, 18 MB a day at TTL 2 s.
func TestLossStopTurnsKeepNothing(t *testing.T) {
	const turns = 10000
	lock := &renewing{turns: turns, last: time.Now().Add(time.Hour), quiet: make(chan struct{})}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	s := startLossStop(lock, 2*time.Hour, make(chan os.Signal, 2))
	<-lock.quiet
	runtime.GC()
	runtime.ReadMemStats(&after)
	why, _ := s.finish(0)
	if why != "" {
		t.Fatalf("the stop began (%s); the lock was renewed at every turn", why)
	}
	kept := int64(after.HeapAlloc) - int64(before.HeapAlloc)
	t.Logf("%d turns: %d bytes kept (%.1f a turn)", turns, kept, float64(kept)/turns)
	if kept > 64*turns/10 {
		t.Errorf("%d turns of the loss stop keep %d bytes (%.1f a turn) while it runs; want none", turns, kept, float64(kept)/turns)
	}
}
