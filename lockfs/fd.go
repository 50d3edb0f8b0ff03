//go:build unix || windows

package lockfs

import (
	"io/fs"
	"os"
)

// withFd runs fn on f's descriptor through SyscallConn rather than Fd:
// Fd would switch a FIFO opened without blocking back to blocking mode,
// and SyscallConn keeps f from being closed while fn runs.
func withFd(f *os.File, fn func(fd uintptr) error) error {
	rc, err := f.SyscallConn()
	if err != nil {
		return err
	}
	var fnErr error
	if err := rc.Control(func(fd uintptr) { fnErr = fn(fd) }); err != nil {
		// Control fails only when f is already closed.
		return fs.ErrClosed
	}
	return fnErr
}
