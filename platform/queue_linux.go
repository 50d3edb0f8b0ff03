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
// inotifyWatch does, and rings the bell when it leaves (QueueOn).
func (w inotifyWaker) Queue(dir string, names []string, bell string) (Watch, error) {
	b := &fifoBell{path: filepath.Join(dir, bell), fd: -1, ep: -1, cancel: -1, headFD: -1}
	if !b.join() {
		b.Close()
		return w.Watch(dir, names)
	}
	q := &queueWatch{b: b, clock: RealClock(), self: unix.Getpid(), armed: w.armed, watch: func() Watch {
		ws := w.watch(dir, names)
		ws.kept = true // it serves the head's waits from now on
		return ws
	}}
	return q, nil
}

// fifoBell is a waiter's end of a bell that is a FIFO (Bell); its
// descriptors are -1 when not open.
type fifoBell struct {
	path   string      // the bell's path
	fd     int         // the bell, read-write
	st     unix.Stat_t // the bell's, as opened (fd)
	ep     int         // epoll of the bell (exclusive), cancel and headFD
	cancel int         // eventfd, written when ctx ends
	headFD int         // a pidfd of the process watched (WatchPID), polled beside the bell
}

var _ Bell = (*fifoBell)(nil)

// join opens the bell and sleeps on it; false: no bell to be had.
func (b *fifoBell) join() bool {
	name := b.path
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
	b.fd = fd
	st := &b.st
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
	if b.ep, err = unix.EpollCreate1(unix.EPOLL_CLOEXEC); err != nil {
		return false
	}
	if b.cancel, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
		return false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(b.cancel)}
	if unix.EpollCtl(b.ep, unix.EPOLL_CTL_ADD, b.cancel, &ev) != nil {
		return false
	}
	// Exclusive: a ring wakes one sleeper, not every one. (Before linux
	// 4.5 the flag is refused: no queue, the watch of every waiter.)
	ev = unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLEXCLUSIVE, Fd: int32(fd)}
	if unix.EpollCtl(b.ep, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		return false
	}
	return true
}

// Lead takes the head's lock (headLock) without blocking, names itself
// with the bell's flock(2) lock, and then stops polling the bell.
func (b *fifoBell) Lead() bool {
	if headLock(b.fd, unix.F_WRLCK) != nil {
		return false
	}
	// The flock(2) lock names the head in /proc/locks (where an OFD lock
	// names no pid), for those behind to watch its death. A neighbour
	// that holds it (flock(1) on the bell) leaves the head unnamed, and
	// its death costs those behind the bound of a wait; but it leads.
	unix.Flock(b.fd, unix.LOCK_EX|unix.LOCK_NB)
	unix.EpollCtl(b.ep, unix.EPOLL_CTL_DEL, b.fd, nil)
	return true
}

// Unlock lets go of the head's locks: its name first, then the head's
// lock, so that the next head can name itself.
func (b *fifoBell) Unlock() {
	unix.Flock(b.fd, unix.LOCK_UN)
	headLock(b.fd, unix.F_UNLCK)
}

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

// Ring writes one byte into the bell. A bell that holds BellRoom bytes
// already (TIOCINQ, FIONREAD) is full, as a pipe is at EAGAIN.
func (b *fifoBell) Ring() {
	if n, err := unix.IoctlGetInt(b.fd, unix.TIOCINQ); err == nil && n >= BellRoom {
		return
	}
	unix.Write(b.fd, []byte{1})
}

// Take reads one byte: EAGAIN when another sleeper read it first.
func (b *fifoBell) Take() {
	var one [1]byte
	unix.Read(b.fd, one[:])
}

// Holder is the process /proc/locks names as the holder of the bell's
// flock(2) lock (pids of this pid namespace): of the bell this waiter
// holds open, not of whatever the bell's name names now (a bell removed
// by a tmp cleaner and made anew by a later waiter is another queue, with
// a head of its own).
func (b *fifoBell) Holder() int { return flockHolderOf(&b.st) }

// WatchPID polls a pidfd of pid beside the bell.
func (b *fifoBell) WatchPID(pid int) bool {
	b.UnwatchPID()
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return false
	}
	ev := unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(fd)}
	if unix.EpollCtl(b.ep, unix.EPOLL_CTL_ADD, fd, &ev) != nil {
		unix.Close(fd)
		return false
	}
	b.headFD = fd
	return true
}

func (b *fifoBell) UnwatchPID() {
	if b.headFD >= 0 {
		unix.EpollCtl(b.ep, unix.EPOLL_CTL_DEL, b.headFD, nil)
		unix.Close(b.headFD)
	}
	b.headFD = -1
}

// Sleep is one epoll_wait(2) of up to d on the bell, the pidfd watched
// and the eventfd ctx's end writes. A failed wait sleeps out d.
func (b *fifoBell) Sleep(ctx context.Context, d time.Duration) (rang, died bool, err error) {
	defer cancelOnDone(ctx, b.cancel)()
	var evs [3]unix.EpollEvent
	ms := int((d + time.Millisecond - 1) / time.Millisecond)
	n, werr := unix.EpollWait(b.ep, evs[:], ms)
	if err := ctx.Err(); err != nil {
		return false, false, err
	}
	if werr == unix.EINTR {
		return false, false, nil
	}
	if werr != nil {
		return false, false, RealClock().Sleep(ctx, d)
	}
	for _, ev := range evs[:n] {
		switch {
		case ev.Fd == int32(b.fd):
			rang = true
		case b.headFD >= 0 && ev.Fd == int32(b.headFD):
			died = true
		}
	}
	return rang, died, nil
}

// Close closes the bell's descriptors.
func (b *fifoBell) Close() {
	b.UnwatchPID()
	for _, fd := range []int{b.ep, b.cancel, b.fd} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	b.ep, b.cancel, b.fd = -1, -1, -1
}
