package platform

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"iter"
	"slices"
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
	ws := w.watch(dir, names)
	defer ws.Close()
	return ws.Wait(ctx, pid, d)
}

// Watch keeps the watch across waits: what goes away between them is
// queued until the next.
func (w inotifyWaker) Watch(dir string, names []string) (keptWatch, error) {
	return w.watch(dir, names), nil
}

func (w inotifyWaker) watch(dir string, names []string) *inotifyWatch {
	ws := &inotifyWatch{armed: w.armed, names: slices.Clone(names), cancel: -1, dir: -1, proc: -1}
	if fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC); err == nil {
		ws.dir = fd
		if _, err := unix.InotifyAddWatch(fd, dir, watchEvents); err != nil {
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
	names  []string
	cancel int // eventfd, written when ctx ends
	dir    int // inotify instance, watching the directory alone
	pid    int // the pid proc is of; 0: none
	proc   int // pidfd
}

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
	if ws.watchPID(pid) {
		return WakeExit, nil
	}
	if ws.cancel < 0 || (ws.dir < 0 && ws.proc < 0) {
		// Nothing to watch, or no way to hear ctx end: sleep.
		return WakeTimeout, realClock{}.Sleep(ctx, d)
	}
	defer cancelOnDone(ctx, ws.cancel)()
	if ws.armed != nil {
		ws.armed()
	}
	return ws.wait(ctx, time.Now().Add(d))
}

// wait polls until ctx ends, the process exits, a watched name changes,
// or the deadline.
func (ws *inotifyWatch) wait(ctx context.Context, deadline time.Time) (Wakeup, error) {
	fds := []unix.PollFd{{Fd: int32(ws.cancel), Events: unix.POLLIN}}
	for _, fd := range []int{ws.dir, ws.proc} {
		if fd >= 0 {
			fds = append(fds, unix.PollFd{Fd: int32(fd), Events: unix.POLLIN})
		}
	}
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return WakeTimeout, nil
		}
		ts := unix.NsecToTimespec(left.Nanoseconds())
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
		if why := ws.polled(fds[1:]); why != WakeTimeout {
			return why, nil
		}
	}
}

// polled reads what a poll of fds found.
func (ws *inotifyWatch) polled(fds []unix.PollFd) Wakeup {
	for _, f := range fds {
		switch {
		case f.Revents == 0:
		case int(f.Fd) == ws.proc:
			return WakeExit
		case f.Revents&unix.POLLIN == 0 || changed(ws.dir, ws.names):
			// POLLERR on inotify: look, rather than spin.
			return WakeChange
		}
	}
	return WakeTimeout
}

// changed reads the events queued on fd: one about names or ending the
// watch, or events lost.
func changed(fd int, names []string) bool {
	var buf [4096]byte // room for at least one event with the longest name
	for {
		n, err := unix.Read(fd, buf[:])
		if err == unix.EINTR {
			continue
		}
		if err != nil || n <= 0 {
			// EAGAIN: all read. Any other failure: look anyway.
			return !errors.Is(err, unix.EAGAIN)
		}
		for ev := range inotifyEvents(buf[:n]) {
			if ev.mask&watchEnded != 0 || slices.Contains(names, ev.name) {
				return true
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

// keptWatch and changeWatch are internal/wake's Watch and Changes, spelled
// out: wake imports platform.
type keptWatch = interface {
	Wait(ctx context.Context, pid int, d time.Duration) (Wakeup, error)
	Close()
}

type changeWatch = interface {
	C() <-chan struct{}
	Stop()
}
