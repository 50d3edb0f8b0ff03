package cli

import (
	"time"

	"golang.org/x/sys/unix"
)

// startTimeOnClock turns a freebsd start time (microseconds since boot)
// into a time, through kern.boottime.
func startTimeOnClock(micros uint64) (time.Time, bool) {
	boot, err := unix.SysctlTimeval("kern.boottime")
	if err != nil {
		return time.Time{}, false
	}
	return time.Unix(0, boot.Nano()).Add(time.Duration(micros) * time.Microsecond), true
}
