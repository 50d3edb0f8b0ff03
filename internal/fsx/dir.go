package fsx

import (
	"errors"
	"io/fs"
	"path/filepath"

	"github.com/proclock/proclock/lockfs"
)

// DirOpener is an optional power of an FS: a directory kept open, whose
// files are reached from it, whatever its path names later (a process
// that changed its working directory, a symlink in the path flipped to
// another directory). A lock keeps its directory so from Acquire to
// Release, so that Release acts on the files it locked (docs/design.md,
// "Release acts on what it locked"). lockfs.OS has it on the unix systems.
type DirOpener interface {
	// OpenDir opens the directory dir names (following symlinks).
	OpenDir(dir string) (Dir, error)
}

// Dir is a directory kept open (KeepDir): base names in it, reached from
// the directory itself. Its methods fail as the FS's of the same names do,
// naming the path the directory was kept by joined with base. It is an
// alias of an interface literal, so that lockfs, which this package
// imports, returns one from its OpenDir without naming it.
type Dir = interface {
	// FileID is FS.FileID of base in the directory.
	FileID(base string) (lockfs.FileID, error)
	// Remove is FS.Remove of base in the directory.
	Remove(base string) error
	// Close lets go of the directory.
	Close() error
}

// ErrDirMoved is matched by the error of a Dir's method, on an FS that
// cannot keep a directory open (no DirOpener), once the path it was kept
// by names another directory than it did: what is there now is not the
// directory's to act on, and is left alone.
var ErrDirMoved = errors.New("the lock's directory is no longer at the path it was reached by")

// KeepDir keeps the directory dir names: opened, through fsys's DirOpener
// where it has one; else reached by its path, checked on every use to be
// still the directory it named here (DirID), failing with ErrDirMoved
// once it is not. A directory the DirOpener may not open (one this user
// may search but not read, where opening needs read permission: darwin,
// the BSDs) is reached by its path too.
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

// pathDir is a Dir reached by its path (KeepDir without a DirOpener).
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
