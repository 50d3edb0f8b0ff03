package platform

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// A linux process reads its own identity and other pids' start times from
// /proc (identity_proc.go), and asks whether a pid exists with signal 0.

func readSelf() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("platform: host name: %w", err)
	}
	return nativeProc.identity(host, os.Getpid())
}

func lookupPID(pid int) (PIDInfo, error) {
	if pid <= 0 {
		// kill(0) and kill(-1) name process groups, not a process.
		return PIDInfo{}, fmt.Errorf("platform: lookup of pid %d: not a process id", pid)
	}
	if !procIsOurs() {
		// /proc shows another pid namespace: /proc/<pid> is someone else.
		exists, err := signalZero(pid)
		return PIDInfo{Exists: exists}, err
	}
	if start, ok := pids.running(pid); ok {
		return PIDInfo{Exists: true, StartTime: start}, nil
	}
	// A pidfd first, so that the start time read next is known to be
	// its process's (kept, it answers the next lookups: pidCache).
	pidfd := pidfdOpen(pid)
	// /proc/<pid>/stat: read, it says both that the pid exists and when
	// it started, in one look (the signal is not needed).
	st, err := nativeProc.stat(strconv.Itoa(pid))
	switch {
	case err == nil && nativeProc.exited(pid, st):
		closePidfd(pidfd)
		return PIDInfo{}, nil
	case err == nil:
		start := nativeClock().hostTicks(st.startTime)
		pids.keep(pid, start, pidfd)
		return PIDInfo{Exists: true, StartTime: start}, nil
	}
	closePidfd(pidfd)
	// Gone, or hidden from us (/proc mounted hidepid), or unreadable: the
	// signal tells whether it exists; its start time stays unknown.
	exists, serr := signalZero(pid)
	if serr != nil || !exists {
		return PIDInfo{}, serr
	}
	return PIDInfo{Exists: true}, nil
}

// nativeClock is this process's boot-time clock, read once: a process
// never changes its time namespace (only its children's).
var nativeClock = sync.OnceValue(nativeProc.timeClock)

// procIsOurs reports whether /proc belongs to this process's pid
// namespace (a container can see the host's /proc, whose pids are not
// ours). When it cannot tell, it trusts /proc, as every tool does.
var procIsOurs = sync.OnceValue(func() bool {
	st, err := nativeProc.stat("self")
	return err != nil || st.pid == os.Getpid()
})

// readProcFile reads a small /proc file in one read, with three system
// calls: os.ReadFile takes twice as many (it stats the file and registers
// it with the runtime's poller), and a lookup is on every judge's path.
func readProcFile(name string) ([]byte, error) {
	fd, err := unix.Open(name, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, &os.PathError{Op: "open", Path: name, Err: err}
	}
	defer unix.Close(fd)
	buf := make([]byte, 4096)
	n, err := unix.Read(fd, buf)
	if err != nil {
		return nil, &os.PathError{Op: "read", Path: name, Err: err}
	}
	return buf[:max(n, 0)], nil
}

// pids keeps what lookups of running processes read, for the next ones.
var pids pidCache

// pidCache answers a lookup of a pid judged lately without reading /proc
// again (three system calls, and the kernel's dearest part of a probe of
// a held lock): it keeps a pidfd of each of the last few processes looked
// up running, with the start time read while the pidfd was open. While
// the pidfd's process has not exited, the pid is still its, so it still
// exists and started then: a poll of the pidfd, one system call, tells.
// A process that exited is looked up afresh (the pid may be another's by
// now). At most pidCacheSize descriptors are kept.
type pidCache struct {
	mu      sync.Mutex
	entries [pidCacheSize]pidEntry
	next    int // the entry to replace next
	hits    int // lookups answered here (tests)
}

// pidCacheSize bounds the descriptors the cache keeps: enough for the
// holders one process watches at once in practice.
const pidCacheSize = 8

// pidEntry is a running process looked up: its pid, start time and pidfd
// (0: an empty entry).
type pidEntry struct {
	pid, pidfd int
	start      uint64
}

// running reports the start time of pid, when the cache holds it and its
// process has not exited; an exited one's entry is let go.
func (c *pidCache) running(pid int) (uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.entries {
		e := &c.entries[i]
		if e.pidfd <= 0 || e.pid != pid {
			continue
		}
		if exited(e.pidfd) {
			closePidfd(e.pidfd)
			*e = pidEntry{}
			return 0, false
		}
		c.hits++
		return e.start, true
	}
	return 0, false
}

// keep records pid's start time with pidfd, opened before the start time
// was read, once a poll shows that its process is still running (so the
// start time read was its own); else pidfd is closed.
func (c *pidCache) keep(pid int, start uint64, pidfd int) {
	if pidfd <= 0 {
		return
	}
	if exited(pidfd) {
		closePidfd(pidfd)
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for i := range c.entries {
		if e := &c.entries[i]; e.pidfd > 0 && e.pid == pid {
			closePidfd(e.pidfd) // another lookup's, of the same process or an older one
			*e = pidEntry{pid: pid, pidfd: pidfd, start: start}
			return
		}
	}
	e := &c.entries[c.next]
	closePidfd(e.pidfd)
	*e = pidEntry{pid: pid, pidfd: pidfd, start: start}
	c.next = (c.next + 1) % pidCacheSize
}

// pidfdOpen is a pidfd of pid, or 0 where there is none (an old kernel, a
// seccomp filter, a pid gone).
func pidfdOpen(pid int) int {
	fd, err := unix.PidfdOpen(pid, 0)
	if err != nil {
		return 0
	}
	return fd
}

// closePidfd closes a pidfd, if any.
func closePidfd(fd int) {
	if fd > 0 {
		unix.Close(fd)
	}
}

// exited reports whether pidfd's process has exited (its pidfd polls
// readable then), or whether it cannot tell.
func exited(pidfd int) bool {
	fds := []unix.PollFd{{Fd: int32(pidfd), Events: unix.POLLIN}}
	for {
		n, err := unix.Poll(fds, 0)
		switch {
		case err == unix.EINTR:
			continue
		case err != nil:
			return true
		}
		return n != 0
	}
}
