package lockfs

import (
	"errors"
	"io"
	"io/fs"
	"syscall"
	"time"
)

// File is an open file of an FS: what a lock does with one. *os.File is one.
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
// Names are paths as the host spells them. Failures are *fs.PathError
// (*os.LinkError for Rename and Link) wrapping the system's error, for
// errors.Is (fs.ErrNotExist, fs.ErrExist, fs.ErrPermission, ErrIsDir,
// ErrNotDir, ErrNameTooLong). An empty name fails with fs.ErrInvalid in
// OS and package fake; the text of errors is unspecified.
//
// Operations on one name are atomic as POSIX makes them: of two
// OpenFile(name, os.O_CREATE|os.O_EXCL, ...) exactly one succeeds; Rename
// replaces its target in one step; Link fails when its new name exists.
// An FS is safe for concurrent use. Whether a removed or renamed file
// stays readable through its open Files is unspecified (windows may
// refuse the Remove instead).
type FS interface {
	// OpenFile opens name with os.OpenFile's flags (O_RDONLY, O_WRONLY,
	// O_RDWR, O_CREATE, O_EXCL, O_TRUNC) and, for a file it creates, perm
	// (maybe masked by a umask). With O_CREATE|O_EXCL it never follows a
	// symlink at the last element. It may block on a FIFO.
	OpenFile(name string, flag int, perm fs.FileMode) (File, error)
	// OpenNoFollow opens name read-only without following a symlink at
	// its last element (ELOOP on POSIX systems) and without blocking on a
	// FIFO or a device.
	OpenNoFollow(name string) (File, error)
	// Lstat describes the file at name, not following a symlink at its
	// last element. Unspecified: FileInfo.Sys.
	Lstat(name string) (fs.FileInfo, error)
	// Remove removes the file or empty directory at name, not following
	// a symlink there.
	Remove(name string) error
	// Rename moves oldname to newname, replacing a file there, in one step.
	Rename(oldname, newname string) error
	// Link creates newname as a hard link to oldname. It fails with an
	// error matching fs.ErrExist when newname exists.
	Link(oldname, newname string) error
	// FileID reports the identity of the file at name, not following a
	// symlink at its last element, or fails wrapping ErrNoFileID.
	FileID(name string) (FileID, error)
	// FileIDOf reports the identity of a file this FS opened; another
	// FS's file may fail, wrapping ErrNoFileID.
	FileIDOf(f File) (FileID, error)
	// DirID reports the identity of the directory dir names, following
	// symlinks: two names of one directory have equal Dev and Ino.
	DirID(dir string) (FileID, error)
}

// FileID identifies a file, not a path: two names for one inode have equal
// FileIDs, and a file created again at the same path has another one, even
// on a reused inode number, where the system records birth times.
type FileID struct {
	Dev uint64
	Ino uint64
	// Birth is when the file was created, when HasBirth is true; never
	// invented where the system cannot tell.
	Birth    time.Time
	HasBirth bool
	// Links is how many names the file had when identified; 0 where the
	// system does not tell. Same and SameOpen leave it out.
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

// SameOpen reports whether a and b are the same file, where one was read
// from a file held open while the answer matters: an open file's inode
// cannot be reused, so birth times, which some systems move (wine reports
// the last write's), are left out.
func (a FileID) SameOpen(b FileID) bool { return a.Dev == b.Dev && a.Ino == b.Ino }

var (
	// ErrNoFileID is returned (wrapped) by FileID and FileIDOf where the
	// system cannot identify files.
	ErrNoFileID = errors.New("lockfs: file identity not supported")
	// ErrIsDir is the system's EISDIR: a directory where a lock expects
	// a file.
	ErrIsDir error = syscall.EISDIR
	// ErrNameTooLong is the system's ENAMETOOLONG: a path or a file name
	// longer than the system takes.
	ErrNameTooLong error = syscall.ENAMETOOLONG
	// ErrNotDir is the system's ENOTDIR: a part of a path that is not a
	// directory.
	ErrNotDir error = syscall.ENOTDIR
)

// NetworkFS is an optional power of an FS: telling whether a directory is
// on a network filesystem, where locks are not reliable.
type NetworkFS interface {
	// NetworkFS returns the network filesystem's type ("nfs", "smb",
	// ...) when dir is on one, and "" when it is not.
	NetworkFS(dir string) (string, error)
}
