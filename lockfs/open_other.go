//go:build windows || js

package lockfs

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow refuses a symlink that Lstat sees, then opens name and checks
// that it opened the file it looked at, which catches a symlink swapped in
// between. js has no O_NOFOLLOW; on windows a plain open keeps the usual
// reparse-point handling (deduplicated and cloud files read as files).
// FIFOs, devices and sockets are refused with EAGAIN: nothing here opens
// them without blocking.
func openNoFollow(name string) (*os.File, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	if err := refuseKind(name, fi.Mode()); err != nil {
		return nil, err
	}
	looked, err := fileIDByName(name)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	f, err := openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	if err := checkOpened(f, looked); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// refuseKind rejects the kinds of file openNoFollow must not open here.
func refuseKind(name string, mode fs.FileMode) error {
	switch {
	case mode&fs.ModeSymlink != 0:
		return &fs.PathError{Op: "open", Path: name, Err: syscall.ELOOP}
	case mode&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeSocket) != 0:
		return &fs.PathError{Op: "open", Path: name, Err: syscall.EAGAIN}
	}
	return nil
}

// checkOpened reports ELOOP when f is not the file that was looked at: a
// symlink (or a junction) put in its place.
func checkOpened(f *os.File, looked FileID) error {
	opened, err := fileIDOfOS(f)
	if err != nil {
		return &fs.PathError{Op: "open", Path: f.Name(), Err: err}
	}
	if !opened.Same(looked) {
		return &fs.PathError{Op: "open", Path: f.Name(), Err: syscall.ELOOP}
	}
	return nil
}
