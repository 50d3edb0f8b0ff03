//go:build linux || wasip1 || js

package platform

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// procfs is where a procfs is mounted: "/proc", or elsewhere in tests.
type procfs string

const nativeProc procfs = "/proc"

// nativeClock is read once: a process (a wasm guest's host process) never
// changes its time namespace.
var nativeClock = sync.OnceValue(nativeProc.timeClock)

func (p procfs) path(elem ...string) string {
	return string(p) + "/" + strings.Join(elem, "/")
}

// identity reads the identity of the process that reads p, given its host
// name; pid 0 takes the pid /proc/self/stat shows, as a wasm guest must.
func (p procfs) identity(host string, pid int) (Identity, error) {
	// Without the boot id a start time in ticks since boot could match a
	// process of an earlier boot, so an unreadable one fails Self.
	bootID, err := p.word("sys/kernel/random/boot_id", "boot id")
	if err != nil {
		return Identity{}, err
	}
	st, err := p.stat("self")
	if err != nil {
		return Identity{}, err
	}
	if pid == 0 {
		pid = st.pid
	}
	clock := p.timeClock()
	pidNS, _ := p.nsInode("self/ns/pid", "pid") // 0 when unknown
	return Identity{
		Host:          host,
		BootID:        bootID,
		PID:           pid,
		StartTime:     clock.hostTicks(st.startTime),
		PIDNamespace:  pidNS,
		TimeNamespace: clock.ns,
		BootOffset:    clock.boot,
	}, nil
}

// timeClock is what a process knows of the boot-time clock it reads start
// times by (docs/design.md, "Time namespaces").
type timeClock struct {
	ns    uint64 // the time namespace's inode; 0 where unknown
	boot  int64  // the offset from the host's boot clock, in ns, when known
	known bool
}

// userHZ is the unit of a start time: 100 wherever Go runs linux.
const userHZ = 100

const tickNanos = int64(1e9 / userHZ)

// hostTicks puts a start time read through c on the host's clock; 0 when
// c's offset is unknown, or would put it before the boot. It may be one
// tick late: the kernel rounds after adding the offset (sameStart).
func (c timeClock) hostTicks(ticks uint64) uint64 {
	if !c.known || ticks == 0 || ticks > math.MaxInt64/2 {
		return 0
	}
	// Floor division: an offset may be negative.
	off := c.boot / tickNanos
	if c.boot%tickNanos < 0 {
		off--
	}
	host := int64(ticks) - off
	if host <= 0 {
		return 0
	}
	return uint64(host)
}

// timeClock reads the time namespace of the process that reads p and its
// offset. timens_offsets tells the namespace of its children, its own but
// after an unshare not yet followed by exec.
func (p procfs) timeClock() timeClock {
	ns, err := p.nsInode("self/ns/time", "time")
	if err != nil {
		_, oerr := readProcFile(p.path("self/timens_offsets"))
		if errors.Is(err, fs.ErrNotExist) && errors.Is(oerr, fs.ErrNotExist) {
			return timeClock{known: true}
		}
		return timeClock{}
	}
	children, err := p.nsInode("self/ns/time_for_children", "time")
	if err != nil || children != ns {
		return timeClock{ns: ns}
	}
	b, err := readProcFile(p.path("self/timens_offsets"))
	if err != nil {
		return timeClock{ns: ns}
	}
	boot, ok := parseBootOffset(string(b))
	return timeClock{ns: ns, boot: boot, known: ok}
}

// maxOffsetSecs bounds an offset that nanoseconds can hold.
const maxOffsetSecs = math.MaxInt64/int64(1e9) - 1

// parseBootOffset reads "boottime <seconds> <nanoseconds>" (or clock id 7)
// of timens_offsets as nanoseconds.
func parseBootOffset(text string) (int64, bool) {
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) != 3 || (f[0] != "boottime" && f[0] != "7") {
			continue
		}
		secs, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			return 0, false
		}
		nanos, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || nanos < 0 || nanos >= 1e9 || secs > maxOffsetSecs || secs < -maxOffsetSecs {
			return 0, false
		}
		return secs*1e9 + nanos, true
	}
	return 0, false
}

// hostname reads the host name of the UTS namespace of the process that
// reads p, as os.Hostname does on linux.
func (p procfs) hostname() (string, error) { return p.word("sys/kernel/hostname", "host name") }

// word reads the one-word file at name, what; empty, it is not procfs.
func (p procfs) word(name, what string) (string, error) {
	b, err := readProcFile(p.path(name))
	if err == nil && len(bytes.TrimSpace(b)) == 0 {
		err = errEmptyProcFile
	}
	if err != nil {
		return "", fmt.Errorf("platform: %s: %w", what, err)
	}
	return string(bytes.TrimSpace(b)), nil
}

var errEmptyProcFile = errors.New("empty: not a procfs file")

// stat reads /proc/<pid>/stat; pid is a number or "self".
func (p procfs) stat(pid string) (procStat, error) {
	name := p.path(pid, "stat")
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

// gone reports whether a reading of /proc/<pid> failed for want of the
// process (ESRCH: it died between the open and the read).
func gone(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH)
}

// exited reports whether st, read of pid, is a process that has exited: a
// zombie holds no file and never will, unless only its main thread is one.
func (p procfs) exited(pid int, st procStat) bool {
	return (st.state == 'Z' || st.state == 'X') && !p.threadsLive(pid)
}

// threadsLive reports whether a process whose leader is a zombie (it
// called pthread_exit) has threads running; only a certain reading says no.
func (p procfs) threadsLive(pid int) bool {
	b, err := readProcFile(p.path(strconv.Itoa(pid), "status"))
	if err != nil {
		return !gone(err)
	}
	for line := range strings.Lines(string(b)) {
		if n, ok := strings.CutPrefix(line, "Threads:"); ok {
			threads, err := strconv.Atoi(strings.TrimSpace(n))
			return err != nil || threads > 1
		}
	}
	return true
}

// procStat is what proclock needs of /proc/<pid>/stat.
type procStat struct {
	pid       int
	state     byte
	startTime uint64
}

var errBadStat = errors.New("malformed stat line")

// parseStat reads the pid (field 1), state (3) and starttime (22) of a
// stat line (proc(5)). The command name (2) may hold spaces and
// parentheses, so the fields after it are counted from the last ')'.
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
	// One by one: a whole split was most of what a probe spent.
	const state, startTime = 3, 22
	var st, start string
	n := state
	for f := range strings.FieldsSeq(line[end+1:]) {
		switch n {
		case state:
			st = f
		case startTime:
			start = f
		}
		if n++; n > startTime {
			break
		}
	}
	if n <= startTime || len(st) != 1 {
		return procStat{}, errBadStat
	}
	t, err := strconv.ParseUint(start, 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("%w: starttime: %w", errBadStat, err)
	}
	return procStat{pid: pid, state: st[0], startTime: t}, nil
}

var errBadNSLink = errors.New("malformed namespace link")

// nsInode reads the namespace link at name ("pid:[4026531836]").
func (p procfs) nsInode(name, kind string) (uint64, error) {
	link, err := os.Readlink(p.path(name))
	if err != nil {
		return 0, err
	}
	inner, ok := strings.CutPrefix(link, kind+":[")
	inner, ok2 := strings.CutSuffix(inner, "]")
	if !ok || !ok2 {
		return 0, errBadNSLink
	}
	ino, err := strconv.ParseUint(inner, 10, 64)
	if err != nil || ino == 0 {
		return 0, errBadNSLink
	}
	return ino, nil
}
