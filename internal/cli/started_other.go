//go:build !linux && !darwin && !freebsd && !windows

package cli

import "time"

// startTimeOnClock: this system records no process start time.
func startTimeOnClock(uint64) (time.Time, bool) { return time.Time{}, false }
