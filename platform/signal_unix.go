//go:build linux || darwin || freebsd

package platform

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// signalZero reports whether pid exists by sending it signal 0. EPERM means
// it exists but is not ours to signal; any error but ESRCH is returned,
// never taken as death. pid must be positive: kill(0) and kill(-1) name
// process groups.
func signalZero(pid int) (bool, error) {
	switch err := unix.Kill(pid, 0); {
	case err == nil, errors.Is(err, unix.EPERM):
		return true, nil
	case errors.Is(err, unix.ESRCH):
		return false, nil
	default:
		return false, fmt.Errorf("platform: signal 0 to pid %d: %w", pid, err)
	}
}
