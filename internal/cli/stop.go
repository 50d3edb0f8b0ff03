package cli

import (
	"fmt"
	"os"
	"sync"
	"syscall"
	"time"
)

// What proclock run does when its lock is lost while COMMAND runs
// (docs/command.md, "When the lock is lost"): it stops COMMAND's whole
// process group, SIGTERM first and SIGKILL once the grace is over, then
// exits with exitLost.
//
//   - A lock with a deadline (a cluster lock's lease: lost unless renewed
//     by then) is in jeopardy grace before its deadline: COMMAND's group
//     gets SIGTERM then, and SIGKILL at the deadline, which comes before
//     the server can expire the lease by the lock's margin. Once begun,
//     the stop goes on even if a renewal comes back in the grace.
//   - A proclock that finds the deadline already past (it was stopped or
//     starved past it) sends SIGKILL at once: the lock may be someone
//     else's.
//   - A loss told by an event (a cluster lock's key deleted or its lease
//     revoked by someone else; a host lock's file removed) gives SIGTERM
//     at once and SIGKILL after the grace. A cluster successor serves its
//     lock-delay (by default the TTL, more than the grace) after such a
//     handoff.

// Exit codes of a run that did not get as far as COMMAND's own end.
const (
	// exitUnreachable: the lock's server could not be reached.
	exitUnreachable = 123
	// exitTimedOut: the wait for a cluster lock ran out (-w). A host
	// lock's gives exitHeld, as flock(1) does and as it always has.
	exitTimedOut = 124
	// exitLost: the lock was lost while COMMAND ran, and run stopped
	// COMMAND's process group.
	exitLost = 125
)

// defaultGrace is the grace between SIGTERM and SIGKILL on a host lock's
// loss; a backend has its own default (Target.Grace).
const defaultGrace = 2 * time.Second

// watched is what the loss stop watches of a held lock.
type watched interface {
	Lost() <-chan struct{}
	Err() error
	Deadline() time.Time
}

// lossStop stops COMMAND's group when the lock it watches is lost. It
// sends its signals through relay, the channel supervise passes on to
// COMMAND's group, so that it needs nothing of supervise but that.
type lossStop struct {
	lock  watched
	grace time.Duration
	relay chan<- os.Signal
	quit  chan struct{}
	done  chan struct{}

	mu     sync.Mutex
	why    string    // why COMMAND is being stopped; "" while it is not
	how    string    // the signals it sends, for people
	killAt time.Time // when SIGKILL is due
}

// startLossStop starts watching lock for COMMAND's run.
func startLossStop(lock watched, grace time.Duration, relay chan<- os.Signal) *lossStop {
	s := &lossStop{lock: lock, grace: grace, relay: relay, quit: make(chan struct{}), done: make(chan struct{})}
	go s.watch()
	return s
}

// watch waits for the lock's jeopardy or loss, then stops COMMAND.
func (s *lossStop) watch() {
	defer close(s.done)
	killAt, ok := s.awaitTrouble()
	if !ok {
		return
	}
	if wait := time.Until(killAt); wait > 0 {
		timer := time.NewTimer(wait)
		defer timer.Stop()
		select {
		case <-timer.C:
		case <-s.quit:
			return
		}
	}
	s.send(syscall.SIGKILL)
}

// awaitTrouble waits until COMMAND must be stopped, sends SIGTERM when
// there is a grace left to give, and returns when SIGKILL is due; ok is
// false when COMMAND ended first.
//
// A proclock that wakes past the deadline it was waiting for (it was
// stopped, or starved) kills at once, whatever the lock says now: a
// renewal that came back after that deadline (the keepalives resume with
// proclock) is too late to have kept the lock, and must not buy COMMAND
// a grace.
//
// One timer serves every turn: a turn comes with each renewal, for as
// long as COMMAND runs, and must leave nothing behind.
func (s *lossStop) awaitTrouble() (killAt time.Time, ok bool) {
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()
	for {
		var jeopardy <-chan time.Time
		deadline := s.lock.Deadline()
		if !deadline.IsZero() {
			timer.Reset(time.Until(deadline.Add(-s.grace)))
			jeopardy = timer.C
		}
		select {
		case <-s.quit:
			return time.Time{}, false
		case <-s.lock.Lost():
			now := time.Now()
			if s.past(deadline, now) {
				return s.begin(fmt.Sprintf("%v", s.lock.Err()), now)
			}
			return s.begin(fmt.Sprintf("%v", s.lock.Err()), now.Add(s.grace))
		case <-jeopardy:
			now := time.Now()
			if s.past(deadline, now) {
				return s.begin(fmt.Sprintf("not renewed before its local deadline, %v ago", roughly(now.Sub(deadline))), now)
			}
			if s.lock.Deadline().After(deadline) {
				continue // renewed meanwhile
			}
			return s.begin(fmt.Sprintf("not renewed %v before its local deadline", s.grace), deadline)
		}
	}
}

// past reports whether now is at or past the deadline proclock waited
// for, or the lock's deadline as it is now.
func (s *lossStop) past(waited, now time.Time) bool {
	if !waited.IsZero() && !now.Before(waited) {
		return true
	}
	d := s.lock.Deadline()
	return !d.IsZero() && !now.Before(d)
}

// begin records why COMMAND is stopped and sends SIGTERM unless SIGKILL
// is due already.
func (s *lossStop) begin(why string, killAt time.Time) (time.Time, bool) {
	now := time.Now()
	s.mu.Lock()
	s.why, s.killAt = why, killAt
	switch {
	case now.Before(killAt):
		s.how = fmt.Sprintf("SIGTERM, then SIGKILL after %v", roughly(killAt.Sub(now)))
	case s.grace == 0:
		s.how = "SIGKILL at once, as --grace 0 asks"
	default:
		s.how = "SIGKILL at once, its deadline being past"
	}
	s.mu.Unlock()
	if now.Before(killAt) {
		s.send(syscall.SIGTERM)
	}
	return killAt, true
}

// send passes sig on to COMMAND's group through the relay.
func (s *lossStop) send(sig syscall.Signal) {
	select {
	case s.relay <- sig:
	case <-s.quit:
	}
}

// finish ends the watch once COMMAND (the group's leader) has ended, and
// reports why COMMAND was stopped ("" when it was not) and how. A stop
// under way is completed first: what is left of the group (a process that
// outlived its leader) gets SIGKILL when it is due, sent to the group pgid
// directly, as supervise no longer relays; a SIGKILL relayed already may
// have come too late for supervise to pass on. A group with nothing left
// is not waited for: run exits as soon as COMMAND has died.
func (s *lossStop) finish(pgid int) (why, how string) {
	close(s.quit)
	<-s.done
	s.mu.Lock()
	why, how, killAt := s.why, s.how, s.killAt
	s.mu.Unlock()
	if why != "" && pgid > 0 {
		awaitGroup(pgid, killAt)
		killGroup(pgid)
	}
	return why, how
}

// groupPoll is how often finish looks whether COMMAND's group is empty.
const groupPoll = 10 * time.Millisecond

// awaitGroup waits until no process of group pgid is left, or until
// killAt. On linux the group is empty by the time COMMAND's end is told
// (proclock reaps the job's last process first); elsewhere a process may
// outlive COMMAND, and gets the rest of its grace.
func awaitGroup(pgid int, killAt time.Time) {
	for !groupGone(pgid) {
		wait := time.Until(killAt)
		if wait <= 0 {
			return
		}
		time.Sleep(min(wait, groupPoll))
	}
}
