package cli

import "time"

// startTimeOnClock turns a windows start time (a FILETIME: 100 ns since
// 1601) into a time.
func startTimeOnClock(ft uint64) (time.Time, bool) {
	const unixEpoch = 116444736000000000 // 1970-01-01 as a FILETIME
	if ft < unixEpoch {
		return time.Time{}, false
	}
	return time.Unix(0, int64(ft-unixEpoch)*100), true
}
