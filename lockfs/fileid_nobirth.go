//go:build unix && !darwin && !freebsd && !netbsd

package lockfs

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthOf reports none: stat(2) has no field for it here.
func birthOf(*unix.Stat_t) (time.Time, bool) { return time.Time{}, false }
