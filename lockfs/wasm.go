//go:build wasip1 || js

package lockfs

import (
	"errors"
	"io/fs"
	"os"
	"syscall"
)

func openFile(name string, flag int, perm fs.FileMode) (*os.File, error) {
	return os.OpenFile(name, flag, perm)
}

// The host (WASI's filestat, Node's fs.Stats) tells device and inode
// through syscall.Stat_t, and no birth time.
func fileIDByName(name string) (FileID, error) {
	fi, err := os.Lstat(name)
	if err != nil {
		return FileID{}, pathErrCause(err)
	}
	return fileIDOfInfo(fi)
}

func fileIDOfOS(f *os.File) (FileID, error) {
	fi, err := f.Stat()
	if err != nil {
		return FileID{}, pathErrCause(err)
	}
	return fileIDOfInfo(fi)
}

func fileIDOfInfo(fi fs.FileInfo) (FileID, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return FileID{}, ErrNoFileID
	}
	return FileID{Dev: uint64(st.Dev), Ino: st.Ino, Links: uint64(st.Nlink)}, nil
}

// pathErrCause is the error inside a *fs.PathError, for callers that wrap
// it under their own operation.
func pathErrCause(err error) error {
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		return pe.Err
	}
	return err
}
