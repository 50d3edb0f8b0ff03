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
// bytes: x/sys/unix has a type for it on darwin only. Its ki_start is the
// uptime at fork plus the current kern.boottime, which clock steps move,
// so StartTime is ki_start - kern.boottime, read between two equal
// readings of kern.boottime; and BootID is unknown, as one from
// kern.boottime would change with a step and judge every holder dead.

// struct kinfo_proc on the 64-bit ports (KINFO_PROC_SIZE in <sys/user.h>):
// int ki_structsize at 0, pid_t ki_pid at 72 (after two ints and eight
// pointers), struct timeval ki_start at 336 (int64 tv_sec, tv_usec), char
// ki_stat at 388.
const (
	kinfoProcSize = 1088
	offPID        = 72
	offStart      = 336
	offStat       = 388
	stateZombie   = 5 // SZOMB, <sys/proc.h>
)

// errNoStart is a start time not read: a kinfo_proc of another layout, or
// kern.boottime moving. Such a process is judged by its pid alone.
var errNoStart = errors.New("kinfo_proc layout not known on this port, or kern.boottime moving")

func readSelf() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("platform: host name: %w", err)
	}
	pid := os.Getpid()
	_, start, err := readProc(pid)
	if err != nil && !errors.Is(err, errNoStart) {
		return Identity{}, err
	}
	return Identity{Host: host, PID: pid, StartTime: start}, nil
}

func lookupPID(pid int) (PIDInfo, error) {
	exists, err := signalZero(pid)
	if err != nil || !exists {
		return PIDInfo{}, err
	}
	zombie, start, err := readProc(pid)
	switch {
	case errors.Is(err, unix.ESRCH):
		// It died since the signal; ask once more rather than guess.
		exists, err := signalZero(pid)
		return PIDInfo{Exists: exists}, err
	case err != nil:
		// It exists; only its start time is unknown.
		return PIDInfo{Exists: true}, nil
	case zombie:
		// A zombie holds no file and never will.
		return PIDInfo{}, nil
	}
	return PIDInfo{Exists: true, StartTime: start}, nil
}

// readProc reads whether pid is a zombie and, if not, its start time in
// µs since boot.
func readProc(pid int) (zombie bool, start uint64, err error) {
	ne := binary.NativeEndian
	for range 3 {
		before, err := unix.SysctlTimeval("kern.boottime")
		if err != nil {
			return false, 0, fmt.Errorf("platform: sysctl kern.boottime: %w", err)
		}
		b, err := unix.SysctlRaw("kern.proc.pid", pid)
		switch {
		case err != nil:
			return false, 0, fmt.Errorf("platform: sysctl kern.proc.pid.%d: %w", pid, err)
		case len(b) != kinfoProcSize || ne.Uint32(b) != kinfoProcSize || int32(ne.Uint32(b[offPID:])) != int32(pid):
			return false, 0, fmt.Errorf("platform: sysctl kern.proc.pid.%d: %w", pid, errNoStart)
		case b[offStat] == stateZombie:
			return true, 0, nil
		}
		at := int64(ne.Uint64(b[offStart:]))*1e6 + int64(ne.Uint64(b[offStart+8:]))
		boot := before.Nano() / 1e3
		after, err := unix.SysctlTimeval("kern.boottime")
		if err == nil && *after == *before && at >= boot {
			return false, uint64(at - boot), nil
		}
	}
	return false, 0, fmt.Errorf("platform: start time of pid %d: %w", pid, errNoStart)
}
