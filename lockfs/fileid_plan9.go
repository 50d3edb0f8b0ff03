//go:build plan9

package lockfs

import (
	"io/fs"
	"os"
	"syscall"
)

// fileIDByName and fileIDOfOS take the server (type and device) as the
// device and the qid path, unique per file on its server, as the inode.
// Plan 9 keeps no birth time. It has no symlinks either, so the name form
// follows nothing.
func fileIDByName(name string) (FileID, error) {
	fi, err := os.Stat(name)
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
	d, ok := fi.Sys().(*syscall.Dir)
	if !ok {
		return FileID{}, ErrNoFileID
	}
	return FileID{Dev: uint64(d.Type)<<32 | uint64(d.Dev), Ino: d.Qid.Path}, nil
}

// openNoFollow is a plain open: Plan 9 has no symlinks to follow, and
// opening a file never waits for a peer there.
func openNoFollow(name string) (*os.File, error) {
	return os.Open(name)
}
