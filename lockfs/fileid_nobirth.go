//go:build unix && !linux && !darwin && !freebsd && !netbsd

package lockfs

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthOf reports no birth time: OpenBSD, DragonFly, Solaris, illumos and
// AIX have no field for it in stat.
func birthOf(*unix.Stat_t) (time.Time, bool) { return time.Time{}, false }
