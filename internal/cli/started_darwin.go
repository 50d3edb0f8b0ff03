package cli

import "time"

// startTimeOnClock turns a darwin start time (microseconds since the epoch)
// into a time.
func startTimeOnClock(micros uint64) (time.Time, bool) {
	return time.UnixMicro(int64(micros)), true
}
