package fsx

import (
	"io/fs"

	"github.com/proclock/proclock/lockfs"
)

// LookOpener is an optional power of an FS: opening a file for one look
// (open, stat, read, close) more cheaply than OpenNoFollow. The file is
// not to be kept, nor taken for an *os.File.
type LookOpener interface {
	// OpenLook is OpenNoFollow for a look.
	OpenLook(name string) (lockfs.File, error)
}

// OpenLook opens name for a look through fsys's LookOpener, or with
// OpenNoFollow where it has none.
func OpenLook(fsys lockfs.FS, name string) (lockfs.File, error) {
	if lo, ok := fsys.(LookOpener); ok {
		return lo.OpenLook(name)
	}
	return fsys.OpenNoFollow(name)
}

// StatID is f.Stat and fsys.FileIDOf(f), in one system call where f can;
// the zero FileID when it could not be read. The error is Stat's.
func StatID(fsys lockfs.FS, f lockfs.File) (fs.FileInfo, lockfs.FileID, error) {
	if s, ok := f.(interface {
		StatID() (fs.FileInfo, lockfs.FileID, error)
	}); ok {
		return s.StatID()
	}
	info, err := f.Stat()
	if err != nil {
		return nil, lockfs.FileID{}, err
	}
	id, _ := fsys.FileIDOf(f)
	return info, id, nil
}
