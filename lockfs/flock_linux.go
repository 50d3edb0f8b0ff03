package lockfs

import (
	"io/fs"
	"os"

	"golang.org/x/sys/unix"
)

// TryFlock takes a flock(2) lock on f without waiting (Flocker).
func (osFS) TryFlock(f File, exclusive bool) (bool, error) {
	osf, ok := f.(*os.File)
	if !ok || osf == nil {
		return false, &fs.PathError{Op: "flock", Path: "", Err: fs.ErrInvalid}
	}
	how := unix.LOCK_SH | unix.LOCK_NB
	if exclusive {
		how = unix.LOCK_EX | unix.LOCK_NB
	}
	err := withFd(osf, func(fd uintptr) error {
		for {
			if err := unix.Flock(int(fd), how); err != unix.EINTR {
				return err
			}
		}
	})
	switch err {
	case nil:
		return true, nil
	case unix.EWOULDBLOCK:
		return false, nil
	}
	return false, &fs.PathError{Op: "flock", Path: osf.Name(), Err: err}
}

// Unflock lets go of f's flock(2) lock (Flocker).
func (osFS) Unflock(f File) error {
	osf, ok := f.(*os.File)
	if !ok || osf == nil {
		return &fs.PathError{Op: "flock", Path: "", Err: fs.ErrInvalid}
	}
	err := withFd(osf, func(fd uintptr) error {
		for {
			if err := unix.Flock(int(fd), unix.LOCK_UN); err != unix.EINTR {
				return err
			}
		}
	})
	if err != nil {
		return &fs.PathError{Op: "flock", Path: osf.Name(), Err: err}
	}
	return nil
}
