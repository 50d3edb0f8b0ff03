package sqlconn

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ncruces/go-sqlite3/vfs"
)

// DirectVFS is the name of the OS's VFS as the SQLite mechanism opens lock
// files through it: go-sqlite3's, but for FullPathname and Access (below).
const DirectVFS = "proclock-os"

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

func init() {
	if os, ok := vfs.Find("os").(vfs.VFSFilename); ok {
		vfs.Register(DirectVFS, directVFS{os})
	}
}
