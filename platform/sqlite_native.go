//go:build (linux || darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos) && !sqlite3_dotlk

package platform

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ncruces/go-sqlite3"
	"github.com/ncruces/go-sqlite3/vfs"
)

// nativeSQLite opens databases through the VFS of this OS, which locks
// files with OFD locks (linux, darwin), LockFileEx (windows) or flock (the
// BSDs, illumos).
var nativeSQLite SQLite = osSQLite{}

// directVFS is the OS's VFS, but for FullPathname, which does not resolve
// symlinks: go-sqlite3's takes an lstat per path component on every open,
// a sixth of what attaching a lock's file costs. SQLite uses the full name
// to name a database's journal, which a lock never writes, and go-sqlite3
// opens the file itself with O_NOFOLLOW, so a symlink at a lock's path is
// refused either way.
type directVFS struct{ vfs.VFSFilename }

func (directVFS) FullPathname(name string) (string, error) { return filepath.Abs(name) }

// Access says a lock's journal and write-ahead log ("<name>-journal",
// "<name>-wal") do not exist, without asking the system: SQLite looks for
// them each time it takes a shared lock, to roll a hot journal back into
// the database or to open it in WAL mode, and a lock, whose file is the
// empty database and never written by SQLite, must do neither. (Only lock
// files are opened through this VFS.) Any other name longer than the
// system takes does not exist either, which is true.
func (v directVFS) Access(name string, flags vfs.AccessFlag) (bool, error) {
	if flags == vfs.ACCESS_EXISTS && (strings.HasSuffix(name, "-journal") || strings.HasSuffix(name, "-wal")) {
		return false, nil
	}
	ok, err := v.VFSFilename.Access(name, flags)
	if errors.Is(err, syscall.ENAMETOOLONG) {
		return false, nil
	}
	return ok, err
}

// directVFSName is what directVFS is registered as.
const directVFSName = "proclock-os"

func init() {
	if os, ok := vfs.Find("os").(vfs.VFSFilename); ok {
		vfs.Register(directVFSName, directVFS{os})
	}
}

type osSQLite struct{}

// Open opens path through the OS's VFS. An in-memory database (":memory:",
// to which proclock attaches lock files) opens through directVFS, which
// the files attached to it then use.
func (osSQLite) Open(path string, flags sqlite3.OpenFlag) (*sqlite3.Conn, error) {
	if path == ":memory:" && vfs.Find(directVFSName) != nil {
		return sqlite3.OpenFlags("file::memory:?vfs="+directVFSName, flags|sqlite3.OPEN_URI)
	}
	return sqlite3.OpenFlags(path, flags)
}

// SQLiteName names the file at path for SQLite (SQLiteNamer): path itself
// when it is within SQLite's limit made absolute; else, where this OS can
// (linux, through /proc), a short name by way of a descriptor of the
// file's directory, which done closes; else ErrSQLitePathTooLong. The
// directory is opened by path as given, so that a relative path works in
// a working directory that has no absolute path (one longer than
// PATH_MAX, where Abs fails).
func (osSQLite) SQLiteName(path string) (name string, done func(), err error) {
	if abs, err := filepath.Abs(path); err == nil && len(abs) <= MaxSQLitePath && len(path) <= MaxSQLitePath {
		return path, func() {}, nil
	}
	clean := filepath.Clean(path) // as Abs has it: "d/x.lock/" is x.lock in d
	return shortSQLiteName(filepath.Dir(clean), filepath.Base(clean))
}
