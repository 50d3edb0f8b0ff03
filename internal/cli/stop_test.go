package cli

import (
	"errors"
	"os"
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
