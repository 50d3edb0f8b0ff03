//go:build freebsd

package platform

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"

	"golang.org/x/sys/unix"
)

// FreeBSD's kinfo_proc (sysctl kern.proc.pid.<pid>) is read from raw
// bytes: x/sys/unix has none. Its ki_start is the uptime at fork plus the
// current kern.boottime, which clock steps move, so StartTime is ki_start
// - kern.boottime; and BootID is unknown, as one from kern.boottime would
// change with a step and judge every holder dead.

// struct kinfo_proc on the 64-bit ports (KINFO_PROC_SIZE in <sys/user.h>).
const (
	kinfoProcSize  = 1088
	offStructsize  = 0   // int ki_structsize
	offPID         = 72  // pid_t ki_pid, after two ints and eight pointers
	offStartSec    = 336 // struct timeval ki_start: int64 tv_sec ...
	offStartUsec   = 344 // ... and int64 tv_usec
	offStat        = 388 // char ki_stat
	stateZombie    = 5   // SZOMB, <sys/proc.h>
	boottimeChecks = 3
)

var (
	errKinfoLayout = errors.New("kinfo_proc layout not known on this port")
	errClockMoving = errors.New("kern.boottime kept moving while reading a start time")
)

func readSelf() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("platform: host name: %w", err)
	}
	pid := os.Getpid()
	p, err := readProc(pid)
	switch {
	case errors.Is(err, errKinfoLayout), errors.Is(err, errClockMoving):
		// Rather than fail for good, judged by its pid alone.
	case err != nil:
		return Identity{}, err
	}
	return Identity{Host: host, PID: pid, StartTime: p.start}, nil
}

func lookupPID(pid int) (PIDInfo, error) {
	exists, err := signalZero(pid)
	if err != nil || !exists {
		return PIDInfo{}, err
	}
	p, err := readProc(pid)
	switch {
	case errors.Is(err, unix.ESRCH):
		// It died since the signal; ask once more rather than guess.
		exists, err := signalZero(pid)
		return PIDInfo{Exists: exists}, err
	case err != nil:
		// It exists; only its start time is unknown.
		return PIDInfo{Exists: true}, nil
	case p.zombie:
		// A zombie holds no file and never will.
		return PIDInfo{}, nil
	}
	return PIDInfo{Exists: true, StartTime: p.start}, nil
}

// procFacts is what proclock reads of a kinfo_proc.
type procFacts struct {
	zombie bool
	start  uint64 // microseconds since boot; 0 for a zombie
}

// readProc reads pid's state and start time between two equal readings
// of kern.boottime, so that a clock step cannot skew it.
func readProc(pid int) (procFacts, error) {
	for range boottimeChecks {
		before, err := bootMicros()
		if err != nil {
			return procFacts{}, err
		}
		zombie, startAbs, err := readKinfo(pid)
		if err != nil || zombie {
			return procFacts{zombie: zombie}, err
		}
		after, err := bootMicros()
		if err != nil {
			return procFacts{}, err
		}
		if before == after && startAbs >= before {
			return procFacts{start: startAbs - before}, nil
		}
	}
	return procFacts{}, fmt.Errorf("platform: start time of pid %d: %w", pid, errClockMoving)
}

// readKinfo returns whether pid is a zombie and its ki_start in µs since
// the epoch.
func readKinfo(pid int) (zombie bool, start uint64, err error) {
	b, err := unix.SysctlRaw("kern.proc.pid", pid)
	if err != nil {
		return false, 0, fmt.Errorf("platform: sysctl kern.proc.pid.%d: %w", pid, err)
	}
	if !kinfoLayoutKnown(b, pid) {
		return false, 0, fmt.Errorf("platform: sysctl kern.proc.pid.%d: %w", pid, errKinfoLayout)
	}
	if b[offStat] == stateZombie {
		return true, 0, nil
	}
	ne := binary.NativeEndian
	sec, usec := int64(ne.Uint64(b[offStartSec:])), int64(ne.Uint64(b[offStartUsec:]))
	if sec < 0 || usec < 0 {
		return false, 0, fmt.Errorf("platform: sysctl kern.proc.pid.%d: %w", pid, errKinfoLayout)
	}
	return false, uint64(sec)*1e6 + uint64(usec), nil
}

// kinfoLayoutKnown reports whether b is a kinfo_proc of the layout above:
// its size, its ki_structsize and its pid.
func kinfoLayoutKnown(b []byte, pid int) bool {
	ne := binary.NativeEndian
	return len(b) == kinfoProcSize &&
		ne.Uint32(b[offStructsize:]) == kinfoProcSize &&
		int32(ne.Uint32(b[offPID:])) == int32(pid)
}

// bootMicros reads kern.boottime in microseconds since the epoch.
func bootMicros() (uint64, error) {
	tv, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return 0, fmt.Errorf("platform: sysctl kern.boottime: %w", err)
	}
	return uint64(tv.Nano() / 1e3), nil
}
