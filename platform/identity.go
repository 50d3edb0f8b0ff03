package platform

import (
	"fmt"
	"strconv"
	"strings"
)

// Identity says who a process is, so that another process can judge
// whether it still lives and a person can read who holds a lock.
type Identity struct {
	// Host is the host name.
	Host string `json:"host"`
	// BootID names one boot of the host; "" when unknown.
	BootID string `json:"bootId,omitempty"`
	// PID is the process id.
	PID int `json:"pid"`
	// StartTime is when the process started, in units of the OS that
	// recorded it (linux: clock ticks since boot, by the host's boot
	// clock, whatever time namespace the process is in; darwin:
	// microseconds since the epoch; freebsd: microseconds since boot;
	// windows: 100 ns since 1601). It is only ever compared with another
	// reading of the same host and boot, to tell a reused pid. 0 means
	// unknown: a linux process that cannot tell its time namespace's
	// offset records none (docs/design.md, "Time namespaces").
	StartTime uint64 `json:"startTime,omitempty"`
	// PIDNamespace identifies the pid namespace the PID belongs to
	// (linux: the inode of /proc/self/ns/pid); 0 where the OS has none
	// or it is unknown.
	PIDNamespace uint64 `json:"pidNamespace,omitempty"`
	// TimeNamespace identifies the time namespace the process reads its
	// clocks in (linux: the inode of /proc/self/ns/time); 0 where the OS
	// has none or it is unknown. It is for people: start times are on
	// the host's clock already.
	TimeNamespace uint64 `json:"timeNamespace,omitempty"`
	// BootOffset is how far the boot-time clock of that time namespace
	// is set from the host's, in nanoseconds (linux: the boottime line
	// of /proc/self/timens_offsets); 0 outside such a namespace. A start
	// time taken through an offset clock is placed on the host's to
	// within one unit, so Judge allows that much when either side has
	// one.
	BootOffset int64 `json:"bootOffset,omitempty"`
	// LauncherPID is the pid of the scheduler or wrapper that started
	// the process, from PROCLOCK_LAUNCHER_PID; 0 when none. It is for
	// people reading the identity and plays no part in judging it.
	LauncherPID int `json:"launcherPid,omitempty"`
}

// String gives the identity in one line, for messages.
func (id Identity) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "pid %d", id.PID)
	if id.Host != "" {
		fmt.Fprintf(&b, " on %s", id.Host)
	}
	if id.LauncherPID != 0 {
		fmt.Fprintf(&b, " (launched by pid %d)", id.LauncherPID)
	}
	return b.String()
}

// launcherEnv is the environment variable that names a holder's launcher.
const launcherEnv = "PROCLOCK_LAUNCHER_PID"

// parseLauncherPID reads the value of PROCLOCK_LAUNCHER_PID: a positive
// decimal integer, or 0 for anything else (empty, zero, negative, junk).
func parseLauncherPID(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0
	}
	return n
}
