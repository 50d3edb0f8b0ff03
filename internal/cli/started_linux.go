package cli

import (
	"bufio"
	"os"
	"strconv"
	"strings"
	"time"
)

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's start time: 100
// on every architecture Go runs on.
const clockTicks = 100

// startTimeOnClock turns a start time in clock ticks since boot into a
// time, through the boot time in /proc/stat (to the second).
func startTimeOnClock(ticks uint64) (time.Time, bool) {
	f, err := os.Open("/proc/stat")
	if err != nil {
		return time.Time{}, false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "btime ")
		if !ok {
			continue
		}
		boot, err := strconv.ParseInt(strings.TrimSpace(rest), 10, 64)
		if err != nil {
			return time.Time{}, false
		}
		since := time.Duration(ticks) * (time.Second / clockTicks)
		return time.Unix(boot, 0).Add(since), true
	}
	return time.Time{}, false
}
