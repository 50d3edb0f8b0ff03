//go:build windows || js

package lockfs

import (
	"io/fs"
	"os"
	"syscall"
)

// openNoFollow refuses a symlink that Lstat sees, opens name, and checks
// it opened the file it looked at (js has no O_NOFOLLOW; windows' plain
// open reads deduplicated and cloud files). FIFOs, devices and sockets are
// refused with EAGAIN: nothing here opens them without blocking.
func openNoFollow(name string) (*os.File, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return nil, err
	}
	refuse := func(err error) (*os.File, error) { return nil, &fs.PathError{Op: "open", Path: name, Err: err} }
	switch {
	case fi.Mode()&fs.ModeSymlink != 0:
		return refuse(syscall.ELOOP)
	case fi.Mode()&(fs.ModeNamedPipe|fs.ModeDevice|fs.ModeSocket) != 0:
		return refuse(syscall.EAGAIN)
	}
	looked, err := fileIDByName(name)
	if err != nil {
		return refuse(err)
	}
	f, err := openFile(name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	opened, err := fileIDOfOS(f)
	if err == nil && !opened.Same(looked) {
		err = syscall.ELOOP // a symlink (or a junction) put in its place
	}
	if err != nil {
		f.Close()
		return refuse(err)
	}
	return f, nil
}
