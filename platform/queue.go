package platform

import (
	"context"
	"time"
)

// Bell is a waiter's end of a queue's bell (docs/protocol.md, "One waiter
// woken per release"): the steps a queued waiter takes on it, each one
// system call natively. QueueOn drives one; the linux Queuer's bell is a
// FIFO, the fake world's a bell of its own (package fake), so that the
// exploration runs the queue's own code.
type Bell interface {
	// Lead takes the head's lock on the bell without blocking and,
	// having it, stops polling the bell (its rings are for the others).
	// It reports whether it took it. (Linux's head's lock is an OFD lock
	// on the bell's first byte, named by a flock(2) lock beside it; the
	// fake world's is one lock.)
	Lead() bool
	// Unlock lets go of the head's lock.
	Unlock()
	// Ring writes one byte into the bell, unless it holds BellRoom bytes
	// already: the first sleeper asleep on it wakes.
	Ring()
	// Take reads one byte from the bell (none when another read it
	// first).
	Take()
	// Holder is the pid of the process that holds the head's lock (as
	// the bell's flock(2) lock names it), in this process's pid
	// namespace; 0: none, or none it can name.
	Holder() int
	// WatchPID polls the death of process pid beside the bell, until
	// UnwatchPID; false: it cannot (gone, or no pidfds).
	WatchPID(pid int) bool
	// UnwatchPID stops watching the process WatchPID watches, if any.
	UnwatchPID()
	// Sleep sleeps on the bell and the process watched for up to d, or
	// until ctx ends (its error): rang, the bell is readable; died, the
	// process watched has exited. Neither: d passed, or nothing worth
	// telling woke it.
	Sleep(ctx context.Context, d time.Duration) (rang, died bool, err error)
	// Close closes the bell: the waiter is no longer queued.
	Close()
}

// BellRoom is the bytes a bell holds before a ring writes no more (the
// room docs/queue.pml gives it): rings enough for the pollers, and unread
// ones do not pile up.
const BellRoom = 3

// QueueOn is the kept watch of a waiter queued on b (Queuer.Queue's): its
// deadlines are on clock c, self is the waiter's own pid, and watch makes
// the head's watch of the lock's names and holder once the waiter leads.
func QueueOn(b Bell, c Clock, self int, watch func() Watch) Watch {
	return &queueWatch{b: b, clock: c, self: self, watch: watch}
}

// Placer is a queue's kept watch (Queuer) that tells its waiter's place.
type Placer interface {
	// Place reports whether the last Wait ended as the waiter became
	// the head, and whether it waits behind a head now.
	Place() (led, behind bool)
}

// queueWatch is a queued waiter's kept watch, on its end of the bell.
type queueWatch struct {
	b     Bell
	clock Clock
	self  int
	watch func() Watch
	armed func() // called once each Wait behind the head, before it sleeps (tests)

	head   Watch // the head's watch; nil: not the head
	led    bool  // the last Wait made this waiter the head
	waited bool  // a Wait has run behind the head
	// headPID is the head this waiter behind watches (Bell.WatchPID);
	// 0: none.
	headPID int
	// deadPID is a head seen exited while its lock stayed (a
	// child it forked holds the bell open): not watched again.
	deadPID int
}

func (q *queueWatch) Place() (led, behind bool) { return q.led, q.head == nil }

// lead makes this waiter the head when there is none: it takes the
// head's lock, stops sleeping on the bell and watches names. It
// reports whether it is the head.
func (q *queueWatch) lead() bool {
	if q.head != nil {
		return true
	}
	if !q.b.Lead() {
		return false
	}
	q.led = true
	q.unwatchHead()
	q.head = q.watch()
	return true
}

// Wait is the head's watch's Wait. A waiter behind the head sleeps on the
// bell and on the head's death (a pidfd of the head's lock's holder)
// until d passes, leading if the bell rings or the head dies and there is
// no head then; it leads too when d has passed and there is no head. It
// reports WakeChange once it leads, and then watches from that moment
// only. A waiter that leads other than on a ring rings once: the next
// sleeper (or the next to queue) then watches the new head
// (docs/protocol.md, "One waiter woken per release").
func (q *queueWatch) Wait(ctx context.Context, pid int, d time.Duration) (Wakeup, error) {
	q.led = false
	if err := ctx.Err(); err != nil || d <= 0 {
		return WakeTimeout, err
	}
	if q.head != nil {
		return q.head.Wait(ctx, pid, d)
	}
	// The head is watched by a waiter that has just queued, and by one
	// that a ring woke and that did not lead (the new head's deputy),
	// from Wait to Wait.
	watch := !q.waited || q.headPID > 0
	q.waited = true
	if q.lead() {
		q.b.Ring()
		return WakeChange, nil
	}
	deadline := q.clock.Now().Add(d)
	for armed := q.armed; ; armed = nil {
		// Watch the head, which may have changed since the last look,
		// or died, or left, in between.
		if watch && q.watchHead() {
			q.b.Ring()
			return WakeChange, nil
		}
		watch = false
		if armed != nil {
			armed()
		}
		left := deadline.Sub(q.clock.Now())
		if left <= 0 {
			break
		}
		rang, died, err := q.b.Sleep(ctx, left)
		if err != nil {
			return WakeTimeout, err
		}
		if rang {
			// A ring: take it (another sleeper may have taken it
			// first), and lead if the head has gone. One byte, no
			// more: a second ring is for the next sleeper, which
			// watches the new head.
			q.b.Take()
			if q.lead() {
				return WakeChange, nil
			}
			watch = true
		}
		if died && q.headPID > 0 {
			// The head died (or the process watched, a head no
			// longer): lead, unless another did first; else sleep on,
			// watching no one (a new head rings for its deputy).
			q.deadPID = q.headPID
			q.unwatchHead()
			if q.lead() {
				q.b.Ring()
				return WakeChange, nil
			}
		}
	}
	if q.lead() {
		q.b.Ring()
		return WakeChange, nil
	}
	return WakeTimeout, nil
}

// watchHead watches the head, the process that holds the head's lock,
// beside the bell, and then looks again whether there is a head: it
// reports whether this waiter led, the head having gone in between. A head
// it cannot name (another pid namespace's, or gone as it looked), or
// cannot watch, is not watched: its death costs the bound of the wait.
func (q *queueWatch) watchHead() (led bool) {
	for range 2 {
		pid := q.b.Holder()
		if pid > 0 && pid == q.headPID {
			return false // the same head, watched already
		}
		q.unwatchHead()
		if pid > 0 && pid != q.deadPID && pid != q.self && q.b.WatchPID(pid) {
			q.headPID = pid
		}
		// Watched first, then looked: a head that dies after the look
		// is heard of.
		if q.lead() {
			return true
		}
		if q.headPID > 0 || pid > 0 {
			return false
		}
		// No head named as it looked, and one now: look once more.
	}
	return false
}

// unwatchHead stops watching the head.
func (q *queueWatch) unwatchHead() {
	if q.headPID > 0 {
		q.b.UnwatchPID()
	}
	q.headPID = 0
}

// Close leaves the queue. A head lets go of the head's lock first and
// then rings twice, so that the sleeper the first ring wakes finds no
// head, and leads, and the one the second wakes leads if the first died
// before it could, or else watches the new head.
func (q *queueWatch) Close() {
	if q.head != nil {
		q.head.Close()
		q.head = nil
		q.b.Unlock()
		q.b.Ring()
		q.b.Ring()
	}
	q.unwatchHead()
	q.b.Close()
}
