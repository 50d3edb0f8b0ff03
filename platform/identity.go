package platform

import (
	"strconv"
)

// Identity says who a process is, so that another process can judge
// whether it lives and a person can read who holds a lock.
type Identity struct {
	// Host is the host name.
	Host string `json:"host"`
	// BootID names one boot of the host; "" when unknown.
	BootID string `json:"bootId,omitempty"`
	// PID is the process id.
	PID int `json:"pid"`
	// StartTime is when the process started, in units of its OS (linux:
	// clock ticks since boot on the host's boot clock; darwin: µs since
	// the epoch; freebsd: µs since boot; windows: 100 ns since 1601),
	// compared only within one host and boot, to tell a reused pid. 0
	// means unknown (docs/design.md, "Time namespaces").
	StartTime uint64 `json:"startTime,omitempty"`
	// PIDNamespace identifies the PID's pid namespace (linux: the inode
	// of /proc/self/ns/pid); 0 where there is none or it is unknown.
	PIDNamespace uint64 `json:"pidNamespace,omitempty"`
	// TimeNamespace identifies the process's time namespace (linux: the
	// inode of /proc/self/ns/time), for people; 0 where there is none or
	// it is unknown.
	TimeNamespace uint64 `json:"timeNamespace,omitempty"`
	// BootOffset is how far that namespace's boot-time clock is set from
	// the host's, in nanoseconds; 0 outside one. A start time read
	// through it is placed on the host's clock to within one unit, which
	// Judge allows.
	BootOffset int64 `json:"bootOffset,omitempty"`
	// LauncherPID is the pid of the scheduler or wrapper that started
	// the process, from PROCLOCK_LAUNCHER_PID, for people; 0 when none.
	LauncherPID int `json:"launcherPid,omitempty"`
}

// String gives the identity in one line.
func (id Identity) String() string {
	s := "pid " + strconv.Itoa(id.PID)
	if id.Host != "" {
		s += " on " + id.Host
	}
	if id.LauncherPID != 0 {
		s += " (launched by pid " + strconv.Itoa(id.LauncherPID) + ")"
	}
	return s
}

// launcherEnv is the environment variable that names a holder's launcher.
const launcherEnv = "PROCLOCK_LAUNCHER_PID"

// parseLauncherPID reads PROCLOCK_LAUNCHER_PID: a positive decimal
// integer, or 0.
func parseLauncherPID(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
