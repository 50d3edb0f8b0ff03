package lockfs

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
	"time"
)

// File is an open file of an FS: what a lock does with one. *os.File is
// one.
type File interface {
	io.Reader
	io.ReaderAt
	io.Writer
	io.WriterAt
	io.Closer
	// Name is the name the file was opened with.
	Name() string
	// Stat describes the open file, even when it has no name left.
	Stat() (fs.FileInfo, error)
	// Truncate changes the file's size.
	Truncate(size int64) error
}

// FS is the filesystem a lock reaches the world through: the operations
// locks perform, and nothing else. Optional powers (NetworkFS,
// RangeLocker) are found by type assertion.
//
// Names are paths as the host spells them. Methods report failures as
// *fs.PathError (*os.LinkError for Rename and Link) wrapping the system's
// error, so callers can match them with errors.Is (fs.ErrNotExist,
// fs.ErrExist, fs.ErrPermission, ErrIsDir, ErrNotDir, ErrNameTooLong) and
// errors.As. Unspecified: the text of errors, which error a name with
// several faults gives, and what an empty name does (proclock refuses one
// before it reaches the FS; OS and package fake fail with fs.ErrInvalid,
// before any system call).
//
// Operations on one name are atomic as POSIX makes them: of two
// OpenFile(name, os.O_CREATE|os.O_EXCL, ...) exactly one succeeds; Rename replaces
// its target in one step; Link fails when its new name exists. An FS is
// safe for concurrent use. Unspecified: whether a removed or renamed file
// stays readable through its open Files (POSIX systems keep it; windows
// may refuse the Remove instead).
type FS interface {
	// OpenFile opens name with os.OpenFile's flags (os.O_RDONLY,
	// os.O_WRONLY, os.O_RDWR, os.O_CREATE, os.O_EXCL, os.O_TRUNC) and, for
	// a file it creates, perm. With os.O_CREATE|os.O_EXCL it never
	// follows a symlink at the last element. Unspecified: whether opening
	// a FIFO blocks (locks open unknown files with OpenNoFollow) and
	// whether perm is masked (by a umask).
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)

	// OpenNoFollow opens name read-only without following a symlink at
	// its last element and without blocking on a FIFO or a device: a
	// symlink fails (with ELOOP on POSIX systems), a FIFO opens at once
	// or fails. Callers check the kind of file with Stat on the result.
	OpenNoFollow(name string) (File, error)

	// Lstat describes the file at name, not following a symlink at its
	// last element. Unspecified: FileInfo.Sys.
	Lstat(name string) (fs.FileInfo, error)

	// Remove removes the file or empty directory at name, not following
	// a symlink there.
	Remove(name string) error

	// Rename moves oldname to newname, replacing a file there, in one
	// step.
	Rename(oldname, newname string) error

	// Link creates newname as a hard link to oldname. It fails with an
	// error matching fs.ErrExist when newname exists.
	Link(oldname, newname string) error

	// FileID reports the identity of the file at name, not following a
	// symlink at its last element. It fails, wrapping ErrNoFileID, where
	// the system cannot identify files.
	FileID(name string) (FileID, error)

	// FileIDOf reports the identity of a file this FS opened; another
	// FS's file may fail, wrapping ErrNoFileID.
	FileIDOf(f File) (FileID, error)

	// DirID reports the identity of the directory dir names, following
	// symlinks: two names of one directory have equal Dev and Ino. It
	// fails when dir does not exist or is not a directory.
	DirID(dir string) (FileID, error)
}

// FileID identifies a file, not a path: two names for one inode have equal
// FileIDs, and a file removed and created again at the same path has
// another one, even when the system reuses the inode number, as long as it
// records birth times.
type FileID struct {
	Dev uint64
	Ino uint64
	// Birth is when the file was created, when HasBirth is true. Where
	// the system cannot tell, HasBirth is false and Birth is zero: an
	// identity never carries an invented birth time.
	Birth    time.Time
	HasBirth bool
	// Links is how many names (hard links) the file had when it was
	// identified; 0 where the system does not tell. It is no part of the
	// identity: Same and SameOpen leave it out.
	Links uint64
}

// Same reports whether a and b are the same file. Birth times are compared
// only when both are known.
func (a FileID) Same(b FileID) bool {
	if a.Dev != b.Dev || a.Ino != b.Ino {
		return false
	}
	if a.HasBirth && b.HasBirth {
		return a.Birth.Equal(b.Birth)
	}
	return true
}

// SameOpen reports whether a and b are the same file, where one of them was
// read from a file held open for as long as the answer matters: an open
// file's inode cannot be given to another, so device and inode tell, and
// birth times, which some systems move (wine reports the last write's),
// are left out.
func (a FileID) SameOpen(b FileID) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

// ErrNoFileID is returned (wrapped) by FileID and FileIDOf where the
// system cannot identify files.
var ErrNoFileID = errors.New("lockfs: file identity not supported")

// ErrIsDir is the error (wrapped in a *fs.PathError) for a directory where a
// lock expects a file; it is the system's EISDIR.
var ErrIsDir error = syscall.EISDIR

// ErrNameTooLong is the error (wrapped in a *fs.PathError) for a path or a
// file name longer than the system takes; it is the system's ENAMETOOLONG.
var ErrNameTooLong error = syscall.ENAMETOOLONG

// NetworkFS is an optional power of an FS: telling whether a directory is
// on a network filesystem, where locks are not reliable. OS has it where
// the system tells (linux, darwin).
type NetworkFS interface {
	// NetworkFS returns the network filesystem's type ("nfs", "smb",
	// ...) when dir is on one, and "" when it is not.
	NetworkFS(dir string) (string, error)
}

// ErrNotDir is the error (wrapped in a *fs.PathError) for a part of a
// path that is not a directory; it is the system's ENOTDIR.
var ErrNotDir error = syscall.ENOTDIR
