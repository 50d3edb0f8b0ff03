//go:build !unix

package lockfs

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/proclock/proclock/internal/fserr"
)

// DirID opens the directory, following symlinks, and identifies it.
func (osFS) DirID(dir string) (FileID, error) {
	if err := fserr.CheckPath("stat", dir); err != nil {
		return FileID{}, err
	}
	f, err := openFile(dir, os.O_RDONLY, 0)
	if err != nil {
		return FileID{}, err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return FileID{}, err
	}
	if !info.IsDir() {
		return FileID{}, &fs.PathError{Op: "stat", Path: dir, Err: syscall.ENOTDIR}
	}
	id, err := fileIDOfOS(f)
	if err != nil {
		return FileID{}, &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	return id, nil
}
