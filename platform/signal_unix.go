//go:build linux || darwin || freebsd

package platform

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// signalZero reports whether pid, positive, exists by sending it signal
// 0: EPERM says it exists, not ours; any error but ESRCH is returned.
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
