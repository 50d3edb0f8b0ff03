package peer

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// exitGrace bounds how long an entrant waits for the owner of a marker it
// found to finish exiting. The kernel drops a dying process's locks
// (closing its files) a moment before the process turns zombie, so a quick
// successor can find it still "running"; a live holder never exits here.
const exitGrace = time.Second

// selfMarker is this process's pid and start time.
func selfMarker() (markerID, error) {
	st, err := readProcStat("/proc/self/stat")
	if err != nil {
		return markerID{}, err
	}
	return markerID{pid: os.Getpid(), start: st.start}, nil
}

// markerOwnerGone reports whether the process that left a marker has died:
// its pid is gone, a zombie, or another process's; or it exits within
// exitGrace (watched through a pidfd, which becomes readable on exit).
func markerOwnerGone(owner markerID) (bool, error) {
	if gone, err := ownerGoneNow(owner); gone || err != nil {
		return gone, err
	}
	fd, err := unix.PidfdOpen(owner.pid, 0)
	if errors.Is(err, unix.ESRCH) {
		return true, nil
	}
	if err != nil {
		return false, fmt.Errorf("pidfd of %d: %w", owner.pid, err)
	}
	defer unix.Close(fd)
	// The pid may have changed hands between the look and the pidfd.
	if gone, err := ownerGoneNow(owner); gone || err != nil {
		return gone, err
	}
	deadline := time.Now().Add(exitGrace)
	for {
		left := time.Until(deadline)
		if left <= 0 {
			return false, nil
		}
		fds := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(fds, int(left.Milliseconds())+1)
		switch {
		case errors.Is(err, unix.EINTR):
			continue
		case err != nil:
			return false, fmt.Errorf("poll pidfd of %d: %w", owner.pid, err)
		case n > 0:
			return true, nil
		}
	}
}

// ownerGoneNow reports whether owner's pid is gone, a zombie, or another
// process (another start time) at this moment.
func ownerGoneNow(owner markerID) (bool, error) {
	st, err := readProcStat("/proc/" + strconv.Itoa(owner.pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		// ESRCH: it was reaped between opening its stat and reading it.
		return true, nil
	}
	if err != nil {
		return false, err
	}
	return st.state == 'Z' || st.state == 'X' || st.start != owner.start, nil
}

type procStat struct {
	state byte
	start uint64
}

// readProcStat reads the state (field 3) and start time (field 22) of a
// /proc/<pid>/stat line, counting fields after the command name's last ')'.
func readProcStat(name string) (procStat, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return procStat{}, err
	}
	line := string(b)
	end := strings.LastIndexByte(line, ')')
	if end < 0 {
		return procStat{}, fmt.Errorf("%s: no command name in %q", name, line)
	}
	f := strings.Fields(line[end+1:])
	if len(f) < 20 || len(f[0]) != 1 {
		return procStat{}, fmt.Errorf("%s: short stat line %q", name, line)
	}
	start, err := strconv.ParseUint(f[19], 10, 64)
	if err != nil {
		return procStat{}, fmt.Errorf("%s: start time: %w", name, err)
	}
	return procStat{state: f[0][0], start: start}, nil
}
