package platform

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

var nativeWake Waker = inotifyWaker{}

// inotifyWaker waits in one ppoll(2) on an inotify watch of the lock's
// directory, a pidfd of its holder and an eventfd that ctx's end writes to.
type inotifyWaker struct {
	armed func() // for tests: called just before each wait
}

// watchEvents are a name going away, and the directory itself (see Waker).
const watchEvents = unix.IN_DELETE | unix.IN_MOVED_FROM |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// watchEnded are the events of a change the watch cannot name.
const watchEnded = unix.IN_Q_OVERFLOW | unix.IN_IGNORED | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_UNMOUNT

func (w inotifyWaker) Wait(ctx context.Context, dir string, names []string, pid int, d time.Duration) (Wakeup, error) {
	if err := ctx.Err(); err != nil || d <= 0 {
		return WakeTimeout, err
	}
	ws := w.watch(dir, names)
	defer ws.Close()
	return ws.Wait(ctx, pid, d)
}

// Watch keeps the watch across waits: what goes away between them is
// queued until the next.
func (w inotifyWaker) Watch(dir string, names []string) (keptWatch, error) {
	ws := w.watch(dir, names)
	ws.kept = true
	return ws, nil
}

func (w inotifyWaker) watch(dir string, names []string) *inotifyWatch {
	ws := &inotifyWatch{armed: w.armed, path: dir, names: slices.Clone(names), cancel: -1, dir: -1, wd: -1, proc: -1, lockFd: -1, lockWd: -1}
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
	armed    func()
	path     string // the directory watched
	names    []string
	cancel   int  // eventfd, written when ctx ends
	dir      int  // inotify instance
	wd       int  // its watch of the directory
	pid      int  // the pid proc is of; 0: none
	proc     int  // pidfd
	lockFd   int  // the first name's file, write-locked (watchUnlock)
	lockWd   int  // its watch for a writer's close
	lockSeen bool // a Wait saw it write-locked, none since let go of
	kept     bool // a Watcher's, serving more than one Wait
}

// watchUnlock watches for the holder of a byte-range write lock on the
// first name's file (SQLite's) letting go of it, as it closes the file
// (IN_CLOSE_WRITE); the kernel is then asked whether it is still locked,
// since waiters' attempts close it too. letGo reports a lock an earlier
// wait saw gone now.
func (ws *inotifyWatch) watchUnlock() (letGo bool) {
	if ws.dir < 0 || len(ws.names) == 0 {
		return false
	}
	name := filepath.Join(ws.path, ws.names[0])
	// Watched first, then asked: a let-go after the question is an event.
	wd, err := unix.InotifyAddWatch(ws.dir, name, unix.IN_CLOSE_WRITE|unix.IN_DONT_FOLLOW)
	if err != nil {
		return false
	}
	ws.lockWd = wd
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_NOFOLLOW|unix.O_NONBLOCK|unix.O_NOCTTY|unix.O_CLOEXEC, 0)
	switch {
	case err != nil:
		ws.unwatchLock()
		return false
	case !writeLocked(fd):
		unix.Close(fd)
		ws.unwatchLock()
		letGo, ws.lockSeen = ws.lockSeen, false
		return letGo
	}
	ws.lockFd, ws.lockSeen = fd, true
	return false
}

// unwatchLock ends watchUnlock's watch.
func (ws *inotifyWatch) unwatchLock() {
	if ws.lockWd >= 0 {
		unix.InotifyRmWatch(ws.dir, uint32(ws.lockWd))
	}
	if ws.lockFd >= 0 {
		unix.Close(ws.lockFd)
	}
	ws.lockFd, ws.lockWd = -1, -1
}

// writeLocked reports whether another open file write-locks any byte of
// the file at fd; a failure to ask counts as locked.
func writeLocked(fd int) bool {
	lk := unix.Flock_t{Type: unix.F_RDLCK}
	for {
		err := unix.FcntlFlock(uintptr(fd), unix.F_OFD_GETLK, &lk)
		if err != unix.EINTR {
			return err != nil || lk.Type != unix.F_UNLCK
		}
	}
}

// closeRechecks are the looks again after a writer's close that left the
// file locked: the kernel tells of a close a moment before it drops the
// file's locks. A timer, not a spin: on a busy machine that costs less.
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
// pid gone already.
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
	// ENOSYS (before linux 5.3), EPERM (seccomp), EMFILE: d bounds the wait.
	return false
}

func (ws *inotifyWatch) Wait(ctx context.Context, pid int, d time.Duration) (Wakeup, error) {
	if err := ctx.Err(); err != nil || d <= 0 {
		return WakeTimeout, err
	}
	deadline := time.Now().Add(d)
	if pid <= 0 {
		// No holder to watch: the kernel's lock let go of ends the wait.
		defer ws.unwatchLock()
		if ws.watchUnlock() {
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
	defer cancelOnDone(ctx, fd)()
	if ws.armed != nil {
		ws.armed()
	}
	why, err := ws.wait(ctx, deadline)
	switch {
	case ws.lockFd >= 0 && why == WakeChange:
		ws.lockSeen = false // let go of, or a name gone: looked at anew
	case ws.kept && pid > 0 && why == WakeChange:
		// A holder's mark gone: its kernel lock goes a moment later,
		// maybe before the next wait watches it. Taken as seen, unasked.
		ws.lockSeen = true
	}
	return why, err
}

// flockLookFrom is the shortest wait for which flockHolder is asked.
const flockLookFrom = 2 * time.Millisecond

// flockHolder returns the pid that /proc/locks says holds a flock(2) write
// lock on the file at path, or 0: a SQLite holder takes one (docs/design.md,
// "flock(1)"), so a waiter whose mark names no holder hears of its death.
func flockHolder(path string) int {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return 0
	}
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
			if !writeLocked(ws.lockFd) {
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

// polled reads what a poll of fds found; closed says a writer closed the
// watched file, still locked: to look at again.
func (ws *inotifyWatch) polled(fds []unix.PollFd) (why Wakeup, closed bool) {
	for _, f := range fds {
		if f.Revents == 0 {
			continue
		}
		if int(f.Fd) == ws.proc {
			return WakeExit, false
		}
		if f.Revents&unix.POLLIN == 0 {
			// POLLERR on inotify: look, rather than spin.
			return WakeChange, false
		}
		change, closedNow := changed(ws.dir, ws.wd, ws.lockWd, ws.names)
		if closedNow && ws.lockFd >= 0 {
			if !writeLocked(ws.lockFd) {
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

// changed reads the events queued on fd: change, one of watch wd about
// names or ending it, or events lost; closed, a writer's close seen by
// watch closeWD.
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
		for ev := range inotifyEvents(buf[:n]) {
			switch {
			case ev.mask&unix.IN_Q_OVERFLOW != 0:
				return true, closed
			case closeWD >= 0 && int(ev.wd) == closeWD:
				closed = closed || ev.mask&unix.IN_CLOSE_WRITE != 0
			case int(ev.wd) != wd: // an earlier Wait's watch
			case ev.mask&watchEnded != 0 || slices.Contains(names, ev.name):
				return true, closed
			}
		}
	}
}

// inotifyEvent is one event read from an inotify instance.
type inotifyEvent struct {
	wd   int32
	mask uint32
	name string
}

// inotifyEvents yields the events read into buf.
func inotifyEvents(buf []byte) iter.Seq[inotifyEvent] {
	return func(yield func(inotifyEvent) bool) {
		for len(buf) >= unix.SizeofInotifyEvent {
			size := int(binary.NativeEndian.Uint32(buf[12:16]))
			end := min(unix.SizeofInotifyEvent+size, len(buf))
			name, _, _ := bytes.Cut(buf[unix.SizeofInotifyEvent:end], []byte{0})
			ev := inotifyEvent{wd: int32(binary.NativeEndian.Uint32(buf[0:4])), mask: binary.NativeEndian.Uint32(buf[4:8]), name: string(name)}
			buf = buf[end:]
			if !yield(ev) {
				return
			}
		}
	}
}

// cancelOnDone makes ctx's end write to the eventfd fd, ending a poll.
// done waits for a write under way (which could land in the next wait, or
// in a file that reused the number) and reads the eventfd back to zero.
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
