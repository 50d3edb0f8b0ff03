//go:build unix && !darwin && !freebsd && !netbsd

package lockfs

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthOf reports no birth time: stat(2) has no field for it here (linux
// tells it through statx only).
func birthOf(*unix.Stat_t) (time.Time, bool) { return time.Time{}, false }
