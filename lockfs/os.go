package lockfs

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/afero"
)

// OS returns the FS of the host's filesystem: afero's OsFs plus hard links,
// file identities and no-follow opens, from each system's own calls (the
// fileid_*.go and open_*.go files).
//
// Every call returns an equal value, so OS() can key a map: two FS values
// for one filesystem must share in-process turns.
func OS() FS { return osFS{} }

// osFS is afero's OsFs (the value afero.NewOsFs points to) with every path
// checked first, so that an empty path is fs.ErrInvalid everywhere: the os
// package calls it ENOENT, and os.RemoveAll("") even succeeds.
type osFS struct{ afero.OsFs }

// Create and Open open as OpenFile does, with each system's own call (the
// open_*.go files): on windows, sharing delete and rename with others.
func (o osFS) Create(name string) (File, error) {
	return o.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (o osFS) Mkdir(name string, perm os.FileMode) error {
	if err := CheckPath("mkdir", name); err != nil {
		return err
	}
	return o.OsFs.Mkdir(name, perm)
}

func (o osFS) MkdirAll(path string, perm os.FileMode) error {
	if err := CheckPath("mkdir", path); err != nil {
		return err
	}
	return o.OsFs.MkdirAll(path, perm)
}

func (o osFS) Open(name string) (File, error) {
	return o.OpenFile(name, os.O_RDONLY, 0)
}

func (o osFS) OpenFile(name string, flag int, perm os.FileMode) (File, error) {
	if err := CheckPath("open", name); err != nil {
		return nil, err
	}
	f, err := openFile(name, flag, perm)
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (o osFS) Remove(name string) error {
	if err := CheckPath("remove", name); err != nil {
		return err
	}
	return o.OsFs.Remove(name)
}

func (o osFS) RemoveAll(path string) error {
	if err := CheckPath("RemoveAll", path); err != nil {
		return err
	}
	return o.OsFs.RemoveAll(path)
}

// Rename fails as os.Rename does, with an *os.LinkError, since it names two
// paths. On windows it waits a little for a target that is open elsewhere
// (rename_windows.go).
func (o osFS) Rename(oldname, newname string) error {
	if err := checkPaths("rename", oldname, newname); err != nil {
		return err
	}
	return rename(oldname, newname)
}

func (o osFS) Stat(name string) (os.FileInfo, error) {
	if err := CheckPath("stat", name); err != nil {
		return nil, err
	}
	return o.OsFs.Stat(name)
}

func (o osFS) Chmod(name string, mode os.FileMode) error {
	if err := CheckPath("chmod", name); err != nil {
		return err
	}
	return o.OsFs.Chmod(name, mode)
}

func (o osFS) Chown(name string, uid, gid int) error {
	if err := CheckPath("chown", name); err != nil {
		return err
	}
	return o.OsFs.Chown(name, uid, gid)
}

func (o osFS) Chtimes(name string, atime, mtime time.Time) error {
	if err := CheckPath("chtimes", name); err != nil {
		return err
	}
	return o.OsFs.Chtimes(name, atime, mtime)
}

func (o osFS) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	if err := CheckPath("lstat", name); err != nil {
		return nil, true, err
	}
	return o.OsFs.LstatIfPossible(name)
}

// SymlinkIfPossible fails as os.Symlink does, with an *os.LinkError.
func (o osFS) SymlinkIfPossible(oldname, newname string) error {
	if err := checkPaths("symlink", oldname, newname); err != nil {
		return err
	}
	return o.OsFs.SymlinkIfPossible(oldname, newname)
}

func (o osFS) ReadlinkIfPossible(name string) (string, error) {
	if err := CheckPath("readlink", name); err != nil {
		return "", err
	}
	return o.OsFs.ReadlinkIfPossible(name)
}

// Link fails as os.Link does, with an *os.LinkError.
func (osFS) Link(oldname, newname string) error {
	if err := checkPaths("link", oldname, newname); err != nil {
		return err
	}
	return os.Link(oldname, newname)
}

func (osFS) OpenNoFollow(name string) (File, error) {
	if err := CheckPath("open", name); err != nil {
		return nil, err
	}
	f, err := openNoFollow(name)
	if err != nil {
		// A nil *os.File in a File would not compare equal to nil.
		return nil, err
	}
	return f, nil
}

func (osFS) FileID(name string) (FileID, error) {
	if err := CheckPath("fileid", name); err != nil {
		return FileID{}, err
	}
	id, err := fileIDByName(name)
	if err != nil {
		return FileID{}, &fs.PathError{Op: "fileid", Path: name, Err: err}
	}
	return id, nil
}

// FileIDOf identifies files opened by this FS, which are *os.File; any
// other File has no identity here.
func (osFS) FileIDOf(f File) (FileID, error) {
	osf, isOS := f.(*os.File)
	if f == nil || (isOS && osf == nil) {
		return FileID{}, &fs.PathError{Op: "fileid", Path: "", Err: fs.ErrInvalid}
	}
	if !isOS {
		return FileID{}, &fs.PathError{Op: "fileid", Path: f.Name(), Err: ErrNoFileID}
	}
	id, err := fileIDOfOS(osf)
	if err != nil {
		return FileID{}, &fs.PathError{Op: "fileid", Path: osf.Name(), Err: err}
	}
	return id, nil
}

// ResolveDir checks dir with Stat before resolving it, so that a missing
// directory, a file and a symlink loop fail with the system's own error
// (ENOENT, ENOTDIR, ELOOP) rather than EvalSymlinks' plain text.
func (osFS) ResolveDir(dir string) (string, error) {
	if err := CheckPath("resolvedir", dir); err != nil {
		return "", err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", &fs.PathError{Op: "resolvedir", Path: dir, Err: err}
	}
	fi, err := os.Stat(abs)
	if err != nil {
		return "", err
	}
	if !fi.IsDir() {
		return "", &fs.PathError{Op: "resolvedir", Path: dir, Err: syscall.ENOTDIR}
	}
	resolved, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", asPathError("resolvedir", dir, err)
	}
	return resolved, nil
}

// checkPaths is CheckPath for the operations that take two paths.
func checkPaths(op, oldname, newname string) error {
	if err := CheckPath(op, oldname); err != nil {
		return err
	}
	return CheckPath(op, newname)
}

// asPathError keeps err when it already is a *fs.PathError and wraps it in
// one otherwise, as the FS contract promises.
func asPathError(op, path string, err error) error {
	if _, ok := errors.AsType[*fs.PathError](err); ok {
		return err
	}
	return &fs.PathError{Op: op, Path: path, Err: err}
}
