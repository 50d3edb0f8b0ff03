package platform

import (
	"context"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

var _ Queuer = inotifyWaker{}

// bellMode is the mode a bell is made with, before the umask: its
// owner's and group's to open read-write, as the lock's other files; no
// one else's, since a reader could take the rings meant for the waiters
// (docs/protocol.md, "One waiter woken per release").
const bellMode = 0o660

// Queue makes the bell (a FIFO) if it is not there, holds it open
// read-write, and polls it with EPOLLEXCLUSIVE: a byte written into it
// wakes one of the processes that sleep on it, the one that joined first
// among those asleep. The head of the queue is the one that holds the
// head's lock on the bell (headLock); it watches names and the holder as
// inotifyWatch does, and rings the bell when it leaves.
func (w inotifyWaker) Queue(dir string, names []string, bell string) (Watch, error) {
	q := &queueWatch{w: w, path: dir, names: names, bell: filepath.Join(dir, bell), fd: -1, ep: -1, cancel: -1, headFD: -1}
	if q.join(q.bell) {
		return q, nil
	}
	q.Close()
	return w.Watch(dir, names)
}

// queueWatch is a kept watch of a queued waiter; its descriptors are -1
// when not open.
type queueWatch struct {
	w      inotifyWaker
	path   string
	names  []string
	bell   string        // the bell's path
	fd     int           // the bell, read-write
	st     unix.Stat_t   // the bell's, as opened (fd)
	ep     int           // epoll of the bell (exclusive), cancel and headFD
	cancel int           // eventfd, written when ctx ends
	head   *inotifyWatch // the head's watch; nil: not the head
	led    bool          // the last Wait made this waiter the head
	waited bool          // a Wait has run behind the head
	// The head this waiter behind watches: a pidfd of the process that
	// holds the bell's flock(2) lock (the head names itself so), polled
	// beside the bell; -1: none.
	headPID, headFD int
	// deadPID is a head seen exited while its lock stayed (a child it
	// forked holds the bell open): not watched again.
	deadPID int
}

func (q *queueWatch) place() (led, behind bool) { return q.led, q.head == nil }

// join opens the bell and sleeps on it; false: no bell to be had.
func (q *queueWatch) join(name string) bool {
	if err := unix.Mkfifo(name, bellMode); err != nil && err != unix.EEXIST {
		return false
	}
	// Only a FIFO is opened: another file at the name (a user's, a
	// device, a symlink) is left alone, and the waiter watches as every
	// waiter did before the queue.
	var before unix.Stat_t
	if err := unix.Lstat(name, &before); err != nil || before.Mode&unix.S_IFMT != unix.S_IFIFO {
		return false
	}
	fd, err := unix.Open(name, unix.O_RDWR|unix.O_NONBLOCK|unix.O_NOFOLLOW|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		return false
	}
	q.fd = fd
	st := &q.st
	if err := unix.Fstat(fd, st); err != nil || st.Mode&unix.S_IFMT != unix.S_IFIFO || st.Ino != before.Ino || st.Dev != before.Dev {
		return false
	}
	// The head's lock must be to be had (OFD locks: linux 3.15, before
	// EPOLLEXCLUSIVE; a seccomp filter may refuse them), or no waiter
	// would ever lead.
	lk := unix.Flock_t{Type: unix.F_WRLCK, Len: 1}
	if unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk) != nil {
		return false
	}
	if q.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return false
	}
	if q.cancel, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(q.cancel)}
	if unix.EpollCtl(q.ep, unix.EPOLL_CTL_ADD, q.cancel, &ev) != nil {
		return false
	}
	// Exclusive: a ring wakes one sleeper, not every one. (Before linux
	// 4.5 the flag is refused: no queue, the watch of every waiter.)
	ev = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(fd)}
	if unix.EpollCtl(q.ep, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		return false
	}
	return true
}

// lead makes this waiter the head when there is none: it takes the head's
// lock (headLock), names itself with the bell's flock(2) lock, stops
// sleeping on the bell (a ring is for the others) and watches names. It
// reports whether it is the head.
func (q *queueWatch) lead() bool {
	if q.head != nil {
		return true
	}
	if headLock(q.fd, unix.F_WRLCK) != nil {
		return false
	}
	// The flock(2) lock names the head in /proc/locks (where an OFD lock
	// names no pid), for those behind to watch its death. A neighbour
	// that holds it (flock(1) on the bell) leaves the head unnamed, and
	// its death costs those behind the bound of a wait; but it leads.
	unix.Flock(q.fd, unix.LOCK_EX|unix.LOCK_NB)
	q.led = true
	q.unwatchHead()
	unix.EpollCtl(q.ep, unix.EPOLL_CTL_DEL, q.fd, nil)
	q.head = q.w.watch(q.path, q.names)
	q.head.kept = true // it serves the head's waits from now on
	return true
}

// Wait is the head's inotifyWatch.Wait. A waiter behind the head sleeps
// on the bell and on the head's death (a pidfd of the bell's flock(2)
// holder) until d passes, leading if the bell rings or the head dies and
// there is no head then; it leads too when d has passed and there is no
// head. It reports WakeChange once it leads, and then watches from that
// moment only. A waiter that leads other than on a ring rings once: the
// next sleeper (or the next to queue) then watches the new head
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
	watch := !q.waited || q.headFD >= 0
	q.waited = true
	if q.lead() {
		q.ring()
		return WakeChange, nil
	}
	deadline := time.Now().Add(d)
	fd := q.cancel
	defer cancelOnDone(ctx, fd)()
	var evs [3]unix.EpollEvent
	for armed := q.w.armed; ; armed = nil {
		// Watch the head, which may have changed since the last look,
		// or died, or left, in between.
		if watch && q.watchHead() {
			q.ring()
			return WakeChange, nil
		}
		watch = false
		if armed != nil {
			armed()
		}
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		ms := int((left + time.Millisecond - 1) / time.Millisecond)
		n, err := unix.EpollWait(q.ep, evs[:], ms)
		if err := ctx.Err(); err != nil {
			return WakeTimeout, err
		}
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return WakeTimeout, RealClock().Sleep(ctx, time.Until(deadline))
		}
		for _, ev := range evs[:n] {
			switch {
			case ev.Fd == int32(q.fd):
				// A ring: take it (another sleeper may have taken it
				// first: EAGAIN), and lead if the head has gone.
				// One byte, no more: a second ring is for the next
				// sleeper, which watches the new head.
				var one [1]byte
				unix.Read(q.fd, one[:])
				if q.lead() {
					return WakeChange, nil
				}
				watch = true
			case q.headFD >= 0 && ev.Fd == int32(q.headFD):
				// The head died (or the process watched, a head no
				// longer): lead, unless another did first; else sleep
				// on, watching no one (a new head rings for its
				// deputy).
				q.deadPID = q.headPID
				q.unwatchHead()
				if q.lead() {
					q.ring()
					return WakeChange, nil
				}
			}
		}
	}
	if q.lead() {
		q.ring()
		return WakeChange, nil
	}
	return WakeTimeout, nil
}

// watchHead polls a pidfd of the head, the process that holds the bell's
// flock(2) lock (/proc/locks, pids of this pid namespace), beside the
// bell, and then looks again whether there is a head: it reports whether
// this waiter led, the head having gone in between. A head it cannot
// name (another pid namespace's, or gone as it looked), or whose pidfd it
// cannot have, is not watched: its death costs the bound of the wait.
// The head looked for is that of the bell this waiter holds open, not of
// whatever the bell's name names now: a bell removed (a tmp cleaner) and
// made anew by a later waiter is another queue, with a head of its own.
func (q *queueWatch) watchHead() (led bool) {
	for range 2 {
		pid := flockHolderOf(&q.st)
		if pid > 0 && pid == q.headPID && q.headFD >= 0 {
			return false // the same head, watched already
		}
		q.unwatchHead()
		if pid > 0 && pid != q.deadPID && pid != unix.Getpid() {
			if fd, err := unix.PidfdOpen(pid, 0); err == nil {
				ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
				if unix.EpollCtl(q.ep, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
					unix.Close(fd)
				} else {
					q.headPID, q.headFD = pid, fd
				}
			}
		}
		// Watched first, then looked: a head that dies after the look
		// is heard of.
		if q.lead() {
			return true
		}
		if q.headFD >= 0 || pid > 0 {
			return false
		}
		// No head named as it looked, and one now: look once more.
	}
	return false
}

// unwatchHead stops watching the head.
func (q *queueWatch) unwatchHead() {
	if q.headFD >= 0 {
		unix.EpollCtl(q.ep, unix.EPOLL_CTL_DEL, q.headFD, nil)
		unix.Close(q.headFD)
	}
	q.headPID, q.headFD = 0, -1
}

// ring writes one byte into the bell: the first sleeper wakes. A bell that
// holds bellRoom bytes already (TIOCINQ, FIONREAD) is full, as a pipe is at
// EAGAIN: rings enough for the pollers, and unread ones do not pile up.
func (q *queueWatch) ring() {
	if n, err := unix.IoctlGetInt(q.fd, unix.TIOCINQ); err == nil && n >= bellRoom {
		return
	}
	unix.Write(q.fd, []byte{1})
}

// bellRoom is the bytes a bell holds before a ring writes no more (the
// room docs/queue.pml gives it).
const bellRoom = 3

// headLock takes (how: F_WRLCK) or lets go of (F_UNLCK) the lock that
// makes a waiter the head, without waiting: an OFD lock on the bell's
// first byte, of the open bell fd. Not a flock(2) lock: flock(1), or
// anyone's flock(2) on the bell, would keep every waiter from leading, and
// then none would watch the lock's names; the kernel keeps the two kinds
// of lock apart.
func headLock(fd int, how int16) error {
	lk := unix.Flock_t{Type: how, Len: 1}
	for {
		if err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_SETLK, &lk); err != unix.EINTR {
			return err
		}
	}
}

// Close leaves the queue. A head lets go of its locks first (its name,
// then the head's lock, so that the next head can name itself) and then
// rings twice, so that the sleeper the first ring wakes finds no
// head, and leads, and the one the second wakes leads if the first died
// before it could, or else watches the new head.
func (q *queueWatch) Close() {
	if q.head != nil {
		q.head.Close()
		q.head = nil
		unix.Flock(q.fd, unix.LOCK_UN)
		headLock(q.fd, unix.F_UNLCK)
		q.ring()
		q.ring()
	}
	q.unwatchHead()
	for _, fd := range []int{q.ep, q.cancel, q.fd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	q.ep, q.cancel, q.fd = -1, -1, -1
}
