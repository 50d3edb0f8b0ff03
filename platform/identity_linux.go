package platform

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"

	"golang.org/x/sys/unix"
)

// Linux tells a process's start time in /proc/<pid>/stat (clock ticks since
// boot), a boot by /proc/sys/kernel/random/boot_id, and a pid namespace by
// the inode behind /proc/self/ns/pid.

const (
	bootIDFile = "/proc/sys/kernel/random/boot_id"
	pidNSLink  = "/proc/self/ns/pid"
)

func readSelf() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("platform: host name: %w", err)
	}
	// Without the boot id a start time in ticks since boot could match a
	// process of an earlier boot, so an unreadable one fails Self.
	boot, err := os.ReadFile(bootIDFile)
	if err != nil {
		return Identity{}, fmt.Errorf("platform: boot id: %w", err)
	}
	st, err := readStat("/proc/self/stat")
	if err != nil {
		return Identity{}, err
	}
	return Identity{
		Host:         host,
		BootID:       string(bytes.TrimSpace(boot)),
		PID:          os.Getpid(),
		StartTime:    st.startTime,
		PIDNamespace: readPIDNamespace(),
	}, nil
}

func lookupPID(pid int) (PIDInfo, error) {
	if pid <= 0 {
		// kill(0) and kill(-1) name process groups, not a process.
		return PIDInfo{}, fmt.Errorf("platform: lookup of pid %d: not a process id", pid)
	}
	exists, err := signalZero(pid)
	if err != nil || !exists {
		return PIDInfo{}, err
	}
	if !procIsOurs() {
		// /proc shows another pid namespace: /proc/<pid> is someone else.
		return PIDInfo{Exists: true}, nil
	}
	st, err := readStat("/proc/" + strconv.Itoa(pid) + "/stat")
	switch {
	case errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH):
		// It died between the signal and the read (ESRCH: between opening
		// its stat and reading it); ask once more rather than guess.
		exists, err := signalZero(pid)
		return PIDInfo{Exists: exists}, err
	case err != nil:
		// It exists; only its start time is unknown.
		return PIDInfo{Exists: true}, nil
	case (st.state == 'Z' || st.state == 'X') && !threadsLive(pid):
		// A zombie has exited and closed all its files: it holds no lock
		// and never will again; only its parent has not reaped it yet.
		return PIDInfo{}, nil
	}
	return PIDInfo{Exists: true, StartTime: st.startTime}, nil
}

// threadsLive reports whether a process whose main thread shows as a
// zombie still has other threads running: a leader that called
// pthread_exit looks like a zombie while the process goes on, files open.
// Only a reading that says so for certain (no such file, or one thread)
// answers no.
func threadsLive(pid int) bool {
	b, err := readProcFile("/proc/" + strconv.Itoa(pid) + "/status")
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return false
	}
	if err != nil {
		return true
	}
	for line := range strings.Lines(string(b)) {
		if n, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, err := strconv.Atoi(strings.TrimSpace(n))
			return err != nil || threads > 1
		}
	}
	return true
}

// procStat is what proclock needs of a /proc/<pid>/stat line.
type procStat struct {
	pid       int
	state     byte
	startTime uint64
}

func readStat(name string) (procStat, error) {
	b, err := readProcFile(name)
	if err != nil {
		return procStat{}, fmt.Errorf("platform: process start time: %w", err)
	}
	st, err := parseStat(string(b))
	if err != nil {
		return procStat{}, fmt.Errorf("platform: %s: %w", name, err)
	}
	return st, nil
}

var errBadStat = errors.New("malformed stat line")

// parseStat reads the pid (field 1), state (field 3) and starttime (field
// 22) of a stat line, as proc(5) numbers them. The command name (field 2)
// is in parentheses and may itself hold spaces and parentheses, so the
// fields after it are counted from the last ')'.
func parseStat(line string) (procStat, error) {
	open := strings.IndexByte(line, '(')
	end := strings.LastIndexByte(line, ')')
	if open < 0 || end < open {
		return procStat{}, errBadStat
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line[:open]))
	if err != nil {
		return procStat{}, fmt.Errorf("%w: pid: %w", errBadStat, err)
	}
	rest := strings.Fields(line[end+1:]) // rest[0] is field 3
	const state, startTime = 3, 22
	if len(rest) <= startTime-state || len(rest[0]) != 1 {
		return procStat{}, errBadStat
	}
	start, err := strconv.ParseUint(rest[startTime-state], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("%w: starttime: %w", errBadStat, err)
	}
	return procStat{pid: pid, state: rest[0][0], startTime: start}, nil
}

// readPIDNamespace returns the inode named by the /proc/self/ns/pid link
// ("pid:[4026531836]"), or 0 when the kernel or a sandbox does not say.
func readPIDNamespace() uint64 {
	link, err := os.Readlink(pidNSLink)
	if err != nil {
		return 0
	}
	inner, ok := strings.CutPrefix(link, "pid:[")
	inner, ok2 := strings.CutSuffix(inner, "]")
	if !ok || !ok2 {
		return 0
	}
	ino, err := strconv.ParseUint(inner, 10, 64)
	if err != nil {
		return 0
	}
	return ino
}

// procIsOurs reports whether /proc belongs to this process's pid
// namespace (a container can see the host's /proc, whose pids are not
// ours). When it cannot tell, it trusts /proc, as every tool does.
var procIsOurs = sync.OnceValue(func() bool {
	st, err := readStat("/proc/self/stat")
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
