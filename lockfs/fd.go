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

// controller is a File of this package's own that is a bare descriptor
// (lookFile).
type controller interface {
	control(fn func(fd uintptr) error) error
}

// controlFd runs fn on the descriptor of f, a File of OS: an *os.File
// (withFd) or a bare descriptor. Any other File is fs.ErrInvalid.
func controlFd(f File, fn func(fd uintptr) error) error {
	switch f := f.(type) {
	case *os.File:
		if f == nil {
			return fs.ErrInvalid
		}
		return withFd(f, fn)
	case controller:
		return f.control(fn)
	}
	return fs.ErrInvalid
}
