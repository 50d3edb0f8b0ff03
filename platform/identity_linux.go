package platform

import (
	"fmt"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

func readSelf() (Identity, error) {
	host, err := os.Hostname()
	if err != nil {
		return Identity{}, fmt.Errorf("platform: host name: %w", err)
	}
	return nativeProc.identity(host, os.Getpid())
}

func lookupPID(pid int) (PIDInfo, error) {
	if !procIsOurs() {
		// /proc shows another pid namespace: /proc/<pid> is someone else.
		exists, err := signalZero(pid)
		return PIDInfo{Exists: exists}, err
	}
	// /proc/<pid>/stat says both that the pid exists and when it started.
	st, err := nativeProc.stat(strconv.Itoa(pid))
	switch {
	case err == nil && nativeProc.exited(pid, st):
		return PIDInfo{}, nil
	case err == nil:
		return PIDInfo{Exists: true, StartTime: nativeClock().hostTicks(st.startTime)}, nil
	}
	// Gone, or hidden (hidepid), or unreadable: the signal tells.
	exists, serr := signalZero(pid)
	if serr != nil || !exists {
		return PIDInfo{}, serr
	}
	return PIDInfo{Exists: true}, nil
}

// procIsOurs reports whether /proc is of this process's pid namespace (a
// container may see the host's); trusted when it cannot tell.
var procIsOurs = sync.OnceValue(func() bool {
	st, err := nativeProc.stat("self")
	return err != nil || st.pid == os.Getpid()
})

// readProcFile reads a small /proc file in three system calls, half of
// os.ReadFile's: a lookup is on every judge's path.
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
