package fsx

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/proclock/proclock/lockfs"
)

// Abs is path made absolute where fsys is lockfs.OS, so that a lock taken
// by a relative path still looks at the files it locked after a chdir
// (docs/protocol.md, "Release acts on what it locked"); else path.
func Abs(fsys lockfs.FS, path string) string {
	if fsys != lockfs.OS() || filepath.IsAbs(path) {
		return path
	}
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}

// DirOpener is an optional power of an FS: a directory kept open, so that
// a lock's Release acts on the files it locked whatever the path names
// later (docs/design.md, "Release acts on what it locked").
type DirOpener interface {
	// OpenDir opens the directory dir names (following symlinks).
	OpenDir(dir string) (Dir, error)
}

// Dir is a directory kept open (KeepDir); its methods fail as the FS's
// do. An alias, so that lockfs returns one without naming it.
type Dir = interface {
	// FileID is FS.FileID of base in the directory.
	FileID(base string) (lockfs.FileID, error)
	// Remove is FS.Remove of base in the directory.
	Remove(base string) error
	// Close lets go of the directory.
	Close() error
}

// ErrDirMoved is matched by the error of a Dir's method, on an FS that
// cannot keep a directory open, once its path names another directory.
var ErrDirMoved = errors.New("the lock's directory is no longer at the path it was reached by")

// KeepDir keeps the directory dir names: opened through fsys's DirOpener;
// else, or where it may not be opened (searchable, not readable), reached
// by its path, checked at every use to name it still.
func KeepDir(fsys lockfs.FS, dir string) (Dir, error) {
	if o, ok := fsys.(DirOpener); ok {
		d, err := o.OpenDir(dir)
		if !errors.Is(err, fs.ErrPermission) {
			return d, err
		}
	}
	id, err := fsys.DirID(dir)
	if err != nil {
		return nil, err
	}
	return &pathDir{fsys: fsys, dir: dir, id: id}, nil
}

// pathDir is a Dir reached by its path.
type pathDir struct {
	fsys lockfs.FS
	dir  string
	id   lockfs.FileID
}

// check fails when the path no longer names the directory kept.
func (d *pathDir) check(op, base string) error {
	now, err := d.fsys.DirID(d.dir)
	if err == nil && !now.SameOpen(d.id) {
		err = &fs.PathError{Op: op, Path: filepath.Join(d.dir, base), Err: ErrDirMoved}
	}
	return err
}

func (d *pathDir) FileID(base string) (lockfs.FileID, error) {
	if err := d.check("fileid", base); err != nil {
		return lockfs.FileID{}, err
	}
	return d.fsys.FileID(filepath.Join(d.dir, base))
}

func (d *pathDir) Remove(base string) error {
	if err := d.check("remove", base); err != nil {
		return err
	}
	return d.fsys.Remove(filepath.Join(d.dir, base))
}

func (d *pathDir) Close() error { return nil }
