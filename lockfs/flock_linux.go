package lockfs

import (
	"errors"

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

func flock(f File, how int) error {
	return fdCall(f, "flock", func(fd int) error { return unix.Flock(fd, how) })
}
