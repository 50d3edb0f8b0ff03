//go:build darwin || freebsd || netbsd

package lockfs

import (
	"time"

	"golang.org/x/sys/unix"
)

// birthOf reads st_birthtim. A filesystem that keeps none leaves it at
// zero (darwin) or -1 (FreeBSD, NetBSD).
func birthOf(st *unix.Stat_t) (time.Time, bool) {
	sec, nsec := int64(st.Btim.Sec), int64(st.Btim.Nsec)
	if sec < 0 || (sec == 0 && nsec == 0) {
		return time.Time{}, false
	}
	return time.Unix(sec, nsec), true
}
