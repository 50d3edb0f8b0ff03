package sqlconn

import (
	"errors"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/ncruces/go-sqlite3/vfs"
)

// DirectVFS is the name of the OS's VFS as the SQLite mechanism opens lock
// files through it: go-sqlite3's, but for FullPathname and Access.
const DirectVFS = "proclock-os"

// directVFS's FullPathname does not resolve symlinks (an lstat per path
// component, a sixth of what attaching a lock's file costs): SQLite uses
// the full name only for a journal, which a lock never writes, and
// go-sqlite3 opens the file with O_NOFOLLOW either way.
type directVFS struct{ vfs.VFSFilename }

func (directVFS) FullPathname(name string) (string, error) { return filepath.Abs(name) }

// Access says, without a system call, that a lock's journal and
// write-ahead log do not exist: SQLite looks for them at each shared lock,
// and a lock's database, never written by SQLite, has neither. A name
// longer than the system takes does not exist either.
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
