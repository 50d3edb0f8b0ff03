package lockfs

import (
	"errors"
	"io/fs"

	"golang.org/x/sys/unix"
)

// TryFlock takes a flock(2) lock on f without waiting (fsx.Flocker).
func (osFS) TryFlock(f File, exclusive bool) (bool, error) {
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	switch err := flock(f, how); {
	case err == nil:
		return true, nil
	case errors.Is(err, unix.EWOULDBLOCK):
		return false, nil
	default:
		return false, err
	}
}

// Unflock lets go of f's flock(2) lock (fsx.Flocker).
func (osFS) Unflock(f File) error { return flock(f, unix.LOCK_UN) }

// flock runs flock(2) with how on f's descriptor, again when interrupted;
// its failure is a *fs.PathError wrapping the system's error.
func flock(f File, how int) error {
	if f == nil {
		return &fs.PathError{Op: "flock", Path: "", Err: fs.ErrInvalid}
	}
	err := controlFd(f, func(fd uintptr) error {
		for {
			if err := unix.Flock(int(fd), how); err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return &fs.PathError{Op: "flock", Path: f.Name(), Err: err}
	}
	return nil
}
