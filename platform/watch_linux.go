package platform

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// changeEvents are anything happening to a name in the directory but its
// being read or closed, and the directory going away.
const changeEvents = unix.IN_CREATE | unix.IN_DELETE | unix.IN_MOVED_FROM | unix.IN_MOVED_TO | unix.IN_MODIFY |
	unix.IN_DELETE_SELF | unix.IN_MOVE_SELF | unix.IN_ONLYDIR

// changeBackstop is how often every watch is told of a change it may have
// missed: a directory above the lock's moved, which inotify does not see.
const changeBackstop = 10 * time.Second

// WatchChanges watches with the process's one inotify instance and the
// mount table (which polls readable on a mount or an unmount), both in the
// runtime's poller. The symlinks on the way to dir are watched too, so
// that one flipped is told at once (docs/protocol.md, "Release acts on
// what it locked").
func (inotifyWaker) WatchChanges(dir string, names []string) (changeWatch, error) {
	return changes.watch(dir, names)
}

// link is a symlink met on the way to a directory: name in dir.
type link struct{ dir, name string }

// maxLinks bounds the symlinks followed, as the kernel's 40 do.
const maxLinks = 40

// linksTo lists the symlinks met on the way to dir, resolved as the kernel
// does (each target spliced in place of its link, ".." taken from the
// directory reached), as far as it can be: an lstat(2) a component.
func linksTo(dir string) []link {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil
	}
	var out []link
	var st unix.Stat_t
	at, rest := "/", abs
	for rest != "" {
		var c string
		c, rest, _ = strings.Cut(rest, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			at = filepath.Dir(at)
			continue
		}
		next := filepath.Join(at, c)
		if err := unix.Lstat(next, &st); err != nil {
			return out
		}
		if st.Mode&unix.S_IFMT != unix.S_IFLNK {
			at = next
			continue
		}
		out = append(out, link{at, c})
		target, err := os.Readlink(next)
		if err != nil || len(out) >= maxLinks {
			return out
		}
		if filepath.IsAbs(target) {
			at = "/"
		}
		if rest != "" {
			target += "/" + rest
		}
		rest = target
	}
	return out
}

// changes is the process's hub of held locks' watches.
var changes changeHub

// changeHub keeps one inotify instance and one descriptor of the mount
// table for every watch, opened by the first and closed with the last.
type changeHub struct {
	run     sync.Mutex     // serialises opening and closing
	readers sync.WaitGroup // ended by closing their files

	mu       sync.Mutex
	inotify  *os.File // nil while no watch is on; in the runtime's poller
	ifd      int      // its descriptor (File.Fd would make it blocking)
	mounts   *os.File // nil when it cannot be polled
	byWD     map[int32][]*dirWatch
	subs     map[*changeSub]struct{}
	backstop *time.Timer
}

// changeSub is one watch: of names in its directory, and of the symlinks
// on the way.
type changeSub struct {
	hub  *changeHub
	on   []*dirWatch // the directory's first, then the symlinks'
	c    chan struct{}
	once sync.Once
}

// dirWatch is a changeSub's watch of names in one directory.
type dirWatch struct {
	sub   *changeSub
	wd    int32 // -1 once the kernel ended it
	names []string
}

func (s *changeSub) C() <-chan struct{} { return s.c }

func (s *changeSub) Stop() { s.once.Do(func() { s.hub.stop(s) }) }

// tell tells s of a change; h.mu is held.
func (s *changeSub) tell() {
	select {
	case s.c <- struct{}{}:
	default:
	}
}

// open opens the hub's descriptors and starts their readers; h.run is held.
func (h *changeHub) open() error {
	fd, err := unix.InotifyInit1(unix.IN_NONBLOCK | unix.IN_CLOEXEC)
	if err != nil {
		return &os.SyscallError{Syscall: "inotify_init1", Err: err}
	}
	f := os.NewFile(uintptr(fd), "inotify")
	if err := f.SetReadDeadline(time.Time{}); err != nil {
		// Not in the poller: Close could not end its reader.
		f.Close()
		return err
	}
	h.mu.Lock()
	h.inotify, h.ifd = f, fd
	h.byWD, h.subs = map[int32][]*dirWatch{}, map[*changeSub]struct{}{}
	h.mu.Unlock()
	h.readers.Go(func() { h.readEvents(f) })
	if mfd, err := unix.Open("/proc/self/mountinfo", unix.O_RDONLY|unix.O_NONBLOCK|unix.O_CLOEXEC, 0); err == nil {
		m := os.NewFile(uintptr(mfd), "/proc/self/mountinfo")
		if m.SetReadDeadline(time.Time{}) != nil {
			m.Close() // unmounts are then seen by the backstop only
			return nil
		}
		h.mounts = m
		waiting := make(chan struct{})
		h.readers.Go(func() { h.readMounts(m, waiting) })
		// A change before the reader waits would be missed.
		<-waiting
	}
	return nil
}

func (h *changeHub) watch(dir string, names []string) (changeWatch, error) {
	h.run.Lock()
	defer h.run.Unlock()
	if h.inotify == nil {
		if err := h.open(); err != nil {
			return nil, err
		}
	}
	h.mu.Lock()
	wd, err := unix.InotifyAddWatch(h.ifd, dir, changeEvents)
	if err != nil {
		idle := len(h.subs) == 0
		h.mu.Unlock()
		if idle {
			h.close()
		}
		return nil, &os.PathError{Op: "inotify_add_watch", Path: dir, Err: err}
	}
	s := &changeSub{hub: h, c: make(chan struct{}, 1)}
	h.add(s, int32(wd), slices.Clone(names))
	for _, ln := range linksTo(dir) {
		// One that cannot be watched is left to the backstop.
		if wd, err := unix.InotifyAddWatch(h.ifd, ln.dir, changeEvents); err == nil {
			h.add(s, int32(wd), []string{ln.name})
		}
	}
	h.subs[s] = struct{}{}
	if h.backstop == nil {
		h.backstop = time.AfterFunc(changeBackstop, h.tellAll)
	}
	h.mu.Unlock()
	return s, nil
}

// add adds s's watch of names on wd; h.mu is held.
func (h *changeHub) add(s *changeSub, wd int32, names []string) {
	w := &dirWatch{sub: s, wd: wd, names: names}
	s.on = append(s.on, w)
	h.byWD[wd] = append(h.byWD[wd], w)
}

func (h *changeHub) stop(s *changeSub) {
	h.run.Lock()
	defer h.run.Unlock()
	h.mu.Lock()
	delete(h.subs, s)
	for _, w := range s.on {
		if w.wd < 0 {
			continue
		}
		left := slices.DeleteFunc(h.byWD[w.wd], func(o *dirWatch) bool { return o == w })
		if len(left) == 0 {
			delete(h.byWD, w.wd)
			unix.InotifyRmWatch(h.ifd, uint32(w.wd))
		} else {
			h.byWD[w.wd] = left
		}
	}
	idle := len(h.subs) == 0
	if idle && h.backstop != nil {
		h.backstop.Stop()
		h.backstop = nil
	}
	h.mu.Unlock()
	if idle {
		h.close()
	}
}

// close closes the hub's descriptors (docs/design.md, "Module state"),
// which ends their readers, and waits for them; h.run is held.
func (h *changeHub) close() {
	h.mu.Lock()
	files := []*os.File{h.inotify, h.mounts}
	h.inotify, h.ifd, h.mounts = nil, -1, nil
	h.mu.Unlock()
	for _, f := range files {
		if f != nil {
			f.Close()
		}
	}
	h.readers.Wait()
}

// tellAll tells every watch of a change, and arms the backstop again.
func (h *changeHub) tellAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for s := range h.subs {
		s.tell()
	}
	if h.backstop != nil {
		h.backstop.Reset(changeBackstop)
	}
}

// readEvents reads the inotify instance f until it is closed.
func (h *changeHub) readEvents(f *os.File) {
	var buf [4096]byte
	for {
		n, err := f.Read(buf[:])
		if err != nil {
			return
		}
		h.dispatch(buf[:n])
	}
}

// dispatch tells the watches the events in buf are about.
func (h *changeHub) dispatch(buf []byte) {
	h.mu.Lock()
	defer h.mu.Unlock()
	for ev := range inotifyEvents(buf) {
		if ev.mask&unix.IN_Q_OVERFLOW != 0 { // of no watch (wd -1)
			for s := range h.subs {
				s.tell()
			}
		}
		for _, w := range h.byWD[ev.wd] {
			if ev.mask&watchEnded != 0 || slices.Contains(w.names, ev.name) {
				w.sub.tell()
			}
			if ev.mask&unix.IN_IGNORED != 0 {
				w.wd = -1 // the kernel ended the watch: nothing to remove
			}
		}
		if ev.mask&unix.IN_IGNORED != 0 {
			delete(h.byWD, ev.wd)
		}
	}
}

// readMounts waits, until m is closed, for the mount table to change (its
// pollers woken); waiting is closed once it waits.
func (h *changeHub) readMounts(m *os.File, waiting chan struct{}) {
	rc, err := m.SyscallConn()
	if err != nil {
		close(waiting)
		return
	}
	first := true
	rc.Read(func(uintptr) bool {
		if first {
			close(waiting) // changes from now on are seen
		} else {
			h.tellAll()
		}
		first = false
		return false // wait for the next change
	})
	if first {
		close(waiting) // failed before it could wait
	}
}
