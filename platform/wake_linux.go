package platform

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// nativeWake watches with inotify and pidfds.
var nativeWake Waker = inotifyWaker{}

// inotifyWaker waits in one ppoll(2) on an inotify watch of the lock's
// directory, a pidfd of its holder and an eventfd that ctx's end writes
// to. Its Wait is a kept watch (inotifyWatch) set up, waited on once and
// closed.
type inotifyWaker struct {
	// armed, when set, is called once everything is watched, just
	// before each wait: tests stage events after it.
	armed func()
}

var _ interface {
	Watch(dir string, names []string) (keptWatch, error)
} = inotifyWaker{}

// watchEvents are the inotify events of a name going away from the
// directory, and those that end the watch (the directory removed or moved
// away). The rest are left out on purpose (see Waker).
const watchEvents = unix.IN_DELETE | unix.IN_MOVED_FROM |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watchEnded are the events that say the watch saw something it cannot
// name: read as a change.
const watchEnded = unix.IN_Q_OVERFLOW | unix.IN_IGNORED | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_UNMOUNT

func (w inotifyWaker) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (Wakeup, error) {
	if err := ctx.Err(); err != nil || d <= 0 {
		return WakeTimeout, err
	}
	ws := w.watch(dir, names)
	defer ws.Close()
	return ws.Wait(ctx, pid, d)
}

// Watch keeps the directory's watch, the eventfd and the last pid's pidfd
// across waits: what goes away between them is queued in the inotify
// instance until the next.
func (w inotifyWaker) Watch(dir string, names []string) (keptWatch, error) {
	ws := w.watch(dir, names)
	ws.kept = true
	return ws, nil
}

func (w inotifyWaker) watch(dir string, names []string) *inotifyWatch {
	ws := &inotifyWatch{armed: w.armed, path: dir, names: slices.Clone(names), cancel: -1, dir: -1, wd: -1, proc: -1, unlock: noLockWatch}
	if fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
		ws.dir = fd
		if wd, err := unix.InotifyAddWatch(fd, dir, watchEvents); err == nil {
			ws.wd = wd
		} else {
			unix.Close(fd)
			ws.dir = -1
		}
	}
	if fd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err == nil {
		ws.cancel = fd
	}
	return ws
}

// inotifyWatch is a kept watch; its descriptors are -1 when not open.
type inotifyWatch struct {
	armed  func()
	path   string // the directory watched
	names  []string
	cancel int // eventfd, written when ctx ends
	dir    int // inotify instance
	wd     int // its watch of the directory
	pid    int // the pid proc is of; 0: none
	proc   int // pidfd
	// unlock is the kernel's lock watched during a Wait without a pid
	// (watchUnlock); its fd is -1 when none is.
	unlock lockWatch
	// lockSeen: a Wait saw the first name's file write-locked, and no
	// Wait since saw it let go of (watchUnlock).
	lockSeen bool
	// kept: a Watcher's kept watch, which serves more than one Wait.
	kept bool
}

// lockWatch is a watch of the file at a kept watch's first name being
// closed by a writer (inotify's IN_CLOSE_WRITE on the file itself, wd in
// the kept watch's instance), and fd, the file opened for reading, through
// which the kernel is asked whether anyone still write-locks it.
type lockWatch struct {
	inotify int // the instance wd is in
	fd, wd  int
}

// watchUnlock starts watching the file at the first name being let go of
// by the holder of a write lock on it (an OFD or POSIX byte-range lock:
// SQLite's). A holder lets go of such a lock when it closes the file, or
// just before (SQLite's own unlock), and closing a file opened for
// writing is an inotify event (IN_CLOSE_WRITE), so that is what is
// watched; the kernel is then asked whether the file is still locked.
// The returned watch's fd is -1 when the file is not locked now (or
// cannot be watched): nothing to wait for there.
//
// Only the file itself is watched, only for this one Wait: every waiter's
// attempt opens the file for writing and closes it, so a waiter that woke
// on any close would wake the others for ever; here a close while the
// lock stays costs a look, not a wake-up of the caller.
//
// letGo reports a lock that an earlier wait of this kept watch saw on
// (lockSeen) and that is gone now: let go of between the waits, as the
// caller tried; the wait ends at once. A file never seen locked (a stamp,
// a mark without a kernel lock) ends no wait so, and a lock seen gone
// ends one wait only.
func (ws *inotifyWatch) watchUnlock() (lw lockWatch, letGo bool) {
	if ws.dir < 0 || len(ws.names) == 0 {
		return noLockWatch, false
	}
	lw = lockWatch{inotify: ws.dir, fd: -1, wd: -1}
	name := filepath.Join(ws.path, ws.names[0])
	// Watched first, then asked: a let-go after the question is an event.
	wd, err := unix.InotifyAddWatch(ws.dir, name, unix.IN_CLOSE_WRITE|unix.IN_DONT_FOLLOW)
	if err != nil {
		return noLockWatch, false
	}
	lw.wd = wd
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	if err != nil {
		lw.close()
		return noLockWatch, false
	}
	lw.fd = fd
	if !writeLocked(fd) {
		// Not the kernel's lock (a stamp, a mark without one), or let
		// go of already.
		lw.close()
		letGo, ws.lockSeen = ws.lockSeen, false
		return noLockWatch, letGo
	}
	ws.lockSeen = true
	return lw, false
}

// noLockWatch is no lockWatch.
var noLockWatch = lockWatch{inotify: -1, fd: -1, wd: -1}

// close ends the watch.
func (lw lockWatch) close() {
	if lw.wd >= 0 {
		unix.InotifyRmWatch(lw.inotify, uint32(lw.wd))
	}
	if lw.fd >= 0 {
		unix.Close(lw.fd)
	}
}

// writeLocked reports whether another open file holds a write lock on any
// byte of the file open at fd (what keeps a read lock out); a failure to
// ask counts as locked (the wait goes on until its time).
func writeLocked(fd int) bool {
	lk := unix.Flock_t{Type: unix.F_RDLCK, Whence: 0, Start: 0, Len: 0}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk)
		if err == unix.EINTR {
			continue
		}
		return err != nil || lk.Type != unix.F_UNLCK
	}
}

// closeRechecks are the looks again at a file's locks after a close by a
// writer that left it locked, counted from the close: the kernel tells a
// file's watchers of its closing a moment before it drops the file's locks
// (the holder may even be preempted in between, by this waiter), so the
// holder's own close can be seen with its lock still on. A later look that
// finds it locked still was another's close (a waiter's attempt); the wait
// goes on. A timer, not a spin: on a busy machine, yielding the CPU to find
// the holder costs more than the moment it needs.
var closeRechecks = []time.Duration{50 * time.Microsecond, time.Millisecond}

func (ws *inotifyWatch) Close() {
	for _, fd := range []int{ws.dir, ws.cancel, ws.proc} {
		if fd >= 0 {
			unix.Close(fd)
		}
	}
	ws.dir, ws.cancel, ws.proc, ws.pid = -1, -1, -1, 0
}

// watchPID makes proc the pidfd of pid (pid <= 0: none); gone reports a
// pid that no longer exists.
func (ws *inotifyWatch) watchPID(pid int) (gone bool) {
	if pid == ws.pid && (pid <= 0 || ws.proc >= 0) {
		return false
	}
	if ws.proc >= 0 {
		unix.Close(ws.proc)
	}
	ws.pid, ws.proc = pid, -1
	if pid <= 0 {
		return false
	}
	fd, err := unix.PidfdOpen(pid, 0) // close-on-exec, always
	switch {
	case err == unix.ESRCH:
		ws.pid = 0
		return true
	case err == nil:
		ws.proc = fd
	}
	// ENOSYS (before linux 5.3), EPERM (a seccomp filter), EMFILE: the
	// holder is not watched; d bounds the wait.
	return false
}

func (ws *inotifyWatch) Wait(ctx context.Context, pid int, d time.Duration) (Wakeup, error) {
	if err := ctx.Err(); err != nil || d <= 0 {
		return WakeTimeout, err
	}
	deadline := time.Now().Add(d)
	if pid <= 0 {
		// No holder to watch: the holder of the kernel's lock on the
		// first name's file, if any, letting go of it ends the wait.
		var letGo bool
		ws.unlock, letGo = ws.watchUnlock()
		defer func() {
			ws.unlock.close()
			ws.unlock = noLockWatch
		}()
		if letGo {
			return WakeChange, nil
		}
	}
	if pid <= 0 && d >= flockLookFrom && len(ws.names) > 0 {
		pid = flockHolder(filepath.Join(ws.path, ws.names[0]))
	}
	if ws.watchPID(pid) {
		return WakeExit, nil
	}
	fd := ws.cancel
	if fd < 0 || (ws.dir < 0 && ws.proc < 0) {
		// Nothing to watch, or no way to hear ctx end: sleep.
		return WakeTimeout, realClock{}.Sleep(ctx, d)
	}
	// ctx's end writes to the eventfd, which ends the poll. The write
	// must be over before this Wait returns, or it could land in the
	// next one (or, once closed, in a file that reused the number).
	defer cancelOnDone(ctx, fd)()
	if ws.armed != nil {
		ws.armed()
	}
	why, err := ws.wait(ctx, deadline)
	switch {
	case ws.unlock.fd >= 0 && why == WakeChange:
		ws.lockSeen = false // let go of, or a name gone: looked at anew
	case ws.kept && pid > 0 && why == WakeChange:
		// A holder's mark gone: a SQLite holder lets go of the kernel's
		// lock a moment later, maybe before the caller's next wait sets
		// up its watch of it, which then finds the lock gone at once.
		// Taken as seen, not asked (no system call before the caller's
		// try): a holder without a kernel lock costs one wait ended at
		// once.
		ws.lockSeen = true
	}
	return why, err
}

// flockLookFrom is the shortest wait without a pid for which the holder of
// a flock(2) lock on the lock's file is looked for (flockHolder): a
// shorter one ends soon anyway.
const flockLookFrom = 2 * time.Millisecond

// flockHolder returns the pid of the process that holds a flock(2) write
// lock on the file at path, as /proc/locks tells (pids of this pid
// namespace), or 0. A SQLite holder takes one beside SQLite's lock
// (docs/design.md, "flock(1)"), so a waiter that knows no holder (its mark
// names none: an identity-less process, flock(1)) still hears of its death.
func flockHolder(path string) int {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0
	}
	return flockHolderOf(&st)
}

// flockHolderOf is flockHolder of the file st is the stat of: the file
// itself, whatever name it has now (a file removed while others hold
// it open, a new one at its name).
func flockHolderOf(st *unix.Stat_t) int {
	data, err := os.ReadFile("/proc/locks")
	if err != nil {
		return 0
	}
	file := fmt.Sprintf("%02x:%02x:%d", unix.Major(st.Dev), unix.Minor(st.Dev), st.Ino)
	for line := range strings.Lines(string(data)) {
		// "1: FLOCK  ADVISORY  WRITE 1234 08:01:5678 0 EOF"; a blocked
		// request has "->" after the number.
		f := strings.Fields(line)
		if len(f) < 6 || f[1] != "FLOCK" || f[3] != "WRITE" || f[5] != file {
			continue
		}
		if pid, err := strconv.Atoi(f[4]); err == nil && pid > 0 {
			return pid
		}
	}
	return 0
}

// wait polls until ctx ends, the process exits, a watched name changes,
// or the deadline.
func (ws *inotifyWatch) wait(ctx context.Context, deadline time.Time) (Wakeup, error) {
	fds := []unix.PollFd{{Fd: int32(ws.cancel), Events: unix.POLLIN}}
	if ws.dir >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(ws.dir), Events: unix.POLLIN})
	}
	if ws.proc >= 0 {
		fds = append(fds, unix.PollFd{Fd: int32(ws.proc), Events: unix.POLLIN})
	}
	var closedAt time.Time // a close that left the lock on, still to look at
	rechecks := 0          // of closeRechecks, made since closedAt
	for {
		now := time.Now()
		if !closedAt.IsZero() && !now.Before(closedAt.Add(closeRechecks[rechecks])) {
			if !writeLocked(ws.unlock.fd) {
				return WakeChange, nil
			}
			if rechecks++; rechecks == len(closeRechecks) {
				closedAt = time.Time{}
			}
		}
		left := deadline.Sub(now)
		if left <= 0 {
			return WakeTimeout, nil
		}
		if !closedAt.IsZero() {
			left = min(left, closedAt.Add(closeRechecks[rechecks]).Sub(now))
		}
		ts := unix.NsecToTimespec(max(left, 0).Nanoseconds())
		_, err := unix.Ppoll(fds, &ts, nil)
		if err == unix.EINTR {
			continue
		}
		if err := ctx.Err(); err != nil {
			return WakeTimeout, err
		}
		if err != nil {
			return WakeTimeout, realClock{}.Sleep(ctx, time.Until(deadline))
		}
		why, closed := ws.polled(fds[1:])
		if why != WakeTimeout {
			return why, nil
		}
		if closed {
			closedAt, rechecks = time.Now(), 0
		}
	}
}

// polled reads what a poll of fds (the watch's, but its cancel) found: a
// wake-up, or WakeTimeout for none; closed says a writer closed the file
// whose kernel lock is watched, still locked, to look at again.
func (ws *inotifyWatch) polled(fds []unix.PollFd) (why Wakeup, closed bool) {
	for _, f := range fds {
		if f.Revents == 0 {
			continue
		}
		if int(f.Fd) == ws.proc {
			return WakeExit, false
		}
		if f.Revents&unix.POLLIN == 0 {
			// POLLERR or the like on inotify: look, rather than spin.
			return WakeChange, false
		}
		change, closedNow := changed(ws.dir, ws.wd, ws.unlock.wd, ws.names)
		if closedNow && ws.unlock.fd >= 0 {
			if !writeLocked(ws.unlock.fd) {
				return WakeChange, false
			}
			closed = true
		}
		if change {
			return WakeChange, false
		}
	}
	return WakeTimeout, closed
}

// changed reads the inotify events queued on fd and reports whether one
// of watch wd is about one of names or ended the watch, or events were
// lost; and, as closed, whether the file watch closeWD (-1: none) saw its
// file closed by a writer.
func changed(fd, wd, closeWD int, names []string) (change, closed bool) {
	var buf [4096]byte // room for at least one event with the longest name
	for {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			// EAGAIN: all read. Any other failure: look anyway.
			return !errors.Is(err, unix.EAGAIN), closed
		}
		for ev := buf[:n]; len(ev) >= unix.SizeofInotifyEvent; {
			evWD := int32(binary.NativeEndian.Uint32(ev[0:4]))
			mask := binary.NativeEndian.Uint32(ev[4:8])
			size := int(binary.NativeEndian.Uint32(ev[12:16]))
			end := min(unix.SizeofInotifyEvent+size, len(ev))
			name := ev[unix.SizeofInotifyEvent:end]
			if i := slices.Index(name, 0); i >= 0 {
				name = name[:i]
			}
			switch {
			case mask&unix.IN_Q_OVERFLOW != 0:
				return true, closed
			case closeWD >= 0 && int(evWD) == closeWD:
				closed = closed || mask&unix.IN_CLOSE_WRITE != 0
			case int(evWD) != wd: // an earlier Wait's watch
			case mask&watchEnded != 0 || slices.Contains(names, string(name)):
				return true, closed
			}
			ev = ev[end:]
		}
	}
}

// cancelOnDone makes ctx's end write to the eventfd fd, which ends a poll
// that watches it. The returned function, called as the wait returns,
// waits for a write under way to be over (or it could land in the next
// wait, or, once fd is closed, in a file that reused the number) and
// reads the eventfd back to zero for the next wait.
func cancelOnDone(ctx context.Context, fd int) (done func()) {
	written := make(chan struct{})
	stop := context.AfterFunc(ctx, func() {
		defer close(written)
		var one [8]byte
		binary.NativeEndian.PutUint64(one[:], 1)
		unix.Write(fd, one[:])
	})
	return func() {
		if !stop() {
			<-written
			var buf [8]byte
			unix.Read(fd, buf[:])
		}
	}
}
