package lockfs

import (
	"io/fs"
	"os"
	"runtime"

	"github.com/proclock/proclock/internal/fserr"
)

// OS returns the FS of the host's filesystem. Every call returns an equal
// value, so that OS() can key a map: two FS values for one filesystem must
// share in-process turns.
func OS() FS { return osFS{} }

// osFS checks every path first: an empty one is fs.ErrInvalid, where the
// os package says ENOENT.
type osFS struct{}

func (osFS) OpenFile(name string, flag int, perm fs.FileMode) (File, error) {
	if err := fserr.CheckPath("open", name); err != nil {
		return nil, err
	}
	return asFile(openFile(name, flag, perm))
}

// asFile keeps a nil *os.File out of a File, where it would not be nil.
func asFile(f *os.File, err error) (File, error) {
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (osFS) OpenNoFollow(name string) (File, error) {
	if err := fserr.CheckPath("open", name); err != nil {
		return nil, err
	}
	return asFile(openNoFollow(name))
}

func (osFS) Lstat(name string) (fs.FileInfo, error) {
	if err := fserr.CheckPath("lstat", name); err != nil {
		return nil, err
	}
	return os.Lstat(name)
}

func (osFS) Remove(name string) error {
	if err := fserr.CheckPath("remove", name); err != nil {
		return err
	}
	return os.Remove(name)
}

// Rename fails as os.Rename does, with an *os.LinkError.
func (osFS) Rename(oldname, newname string) error {
	if err := checkPaths("rename", oldname, newname); err != nil {
		return err
	}
	return rename(oldname, newname)
}

// Link fails as os.Link does, with an *os.LinkError.
func (osFS) Link(oldname, newname string) error {
	if err := checkPaths("link", oldname, newname); err != nil {
		return err
	}
	return os.Link(oldname, newname)
}

func (osFS) FileID(name string) (FileID, error) {
	if err := fserr.CheckPath("fileid", name); err != nil {
		return FileID{}, err
	}
	id, err := fileIDByName(name)
	if err != nil {
		return FileID{}, &fs.PathError{Op: "fileid", Path: name, Err: err}
	}
	return id, nil
}

// FileIDOf identifies files opened by this FS; any other File has no
// identity here.
func (osFS) FileIDOf(f File) (FileID, error) {
	var id FileID
	var err error = ErrNoFileID
	switch f := f.(type) {
	case nil:
		return FileID{}, &fs.PathError{Op: "fileid", Err: fs.ErrInvalid}
	case *os.File:
		if f == nil {
			return FileID{}, &fs.PathError{Op: "fileid", Err: fs.ErrInvalid}
		}
		id, err = fileIDOfOS(f)
	case interface {
		StatID() (fs.FileInfo, FileID, error)
	}:
		_, id, err = f.StatID()
	}
	if err != nil {
		return FileID{}, &fs.PathError{Op: "fileid", Path: f.Name(), Err: err}
	}
	return id, nil
}

// checkPaths is fserr.CheckPath for the operations that take two paths.
func checkPaths(op, oldname, newname string) error {
	if err := fserr.CheckPath(op, oldname); err != nil {
		return err
	}
	return fserr.CheckPath(op, newname)
}

// InUse reports whether err, from Remove or Rename, is how this system
// refuses to change an open file (fsx.InUse).
func (osFS) InUse(err error) bool { return inUse(err) }

// NetworkFS reports the network filesystem dir is on, "" when none or
// where the system does not tell.
func (osFS) NetworkFS(dir string) (string, error) {
	if err := fserr.CheckPath("statfs", dir); err != nil {
		return "", err
	}
	kind, err := networkFS(dir)
	if err != nil {
		return "", &fs.PathError{Op: "statfs", Path: dir, Err: err}
	}
	return kind, nil
}

// PathLimits is PATH_MAX less its NUL and NAME_MAX where they are fixed;
// 0, unknown, elsewhere (fsx.PathLimits).
func (osFS) PathLimits() (path, name int) {
	switch runtime.GOOS {
	case "linux", "android":
		return 4095, 255
	case "darwin", "ios", "freebsd", "netbsd", "openbsd", "dragonfly", "illumos":
		return 1023, 255
	}
	return 0, 0
}
