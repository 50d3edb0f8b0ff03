//go:build unix

package lockfs

import (
	"io/fs"
	"path/filepath"
	"sync"
	"sync/atomic"

	"github.com/proclock/proclock/internal/fserr"
	"golang.org/x/sys/unix"
)

// keptDir is internal/fsx's Dir, spelled out: internal/fsx imports lockfs.
type keptDir = interface {
	FileID(base string) (FileID, error)
	Remove(base string) error
	Close() error
}

// OpenDir opens dir for the *at system calls (fsx.DirOpener). Keepings of
// one directory share its descriptor (docs/design.md, "Module state"),
// found by a stat showing its device and inode (not reused while open).
func (osFS) OpenDir(dir string) (keptDir, error) {
	if err := fserr.CheckPath("open", dir); err != nil {
		return nil, err
	}
	if d := shareDir(dir); d != nil {
		return &osDir{d: d}, nil
	}
	fd, err := sysOpen(dir, dirOpenFlags|unix.O_DIRECTORY, 0)
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
	}
	d := &dirFd{fdBox: fdBox{fd: fd, name: dir}, refs: 1}
	sharedDirs.mu.Lock()
	sharedDirs.m[dir] = d // the path's directory now; an older one's keepings keep theirs
	sharedDirs.mu.Unlock()
	return &osDir{d: d}, nil
}

// sharedDirs are the directories kept open, by the path each was opened by.
var sharedDirs = struct {
	mu sync.Mutex
	m  map[string]*dirFd
}{m: map[string]*dirFd{}}

// shareDir is the kept directory dir names, taken once more, or nil.
func shareDir(dir string) *dirFd {
	sharedDirs.mu.Lock()
	d := sharedDirs.m[dir]
	sharedDirs.mu.Unlock()
	if d == nil {
		return nil
	}
	id, err := osFS{}.DirID(dir)
	if err != nil {
		return nil
	}
	sharedDirs.mu.Lock()
	defer sharedDirs.mu.Unlock()
	if d.refs == 0 {
		return nil // closed meanwhile
	}
	if !d.known {
		var own unix.Stat_t
		if err := retryEINTR(func() error { return unix.Fstat(d.fd, &own) }); err != nil {
			return nil
		}
		d.dev, d.ino, d.known = uint64(own.Dev), uint64(own.Ino), true
	}
	if d.dev != id.Dev || d.ino != id.Ino {
		return nil
	}
	d.refs++
	return d
}

// dirFd is a directory's descriptor, shared by its keepings (osDir).
type dirFd struct {
	fdBox
	// Under sharedDirs.mu: its keepings, and its device and inode.
	refs     int
	known    bool
	dev, ino uint64
}

// osDir is one keeping of a directory's descriptor.
type osDir struct {
	d      *dirFd
	closed atomic.Bool
}

// use runs fn on the directory's descriptor, or fails as a closed file.
func (d *osDir) use(op, base string, fn func(fd int) error) error {
	path := filepath.Join(d.d.name, base)
	if d.closed.Load() {
		return &fs.PathError{Op: op, Path: path, Err: fs.ErrClosed}
	}
	return d.d.use(op, path, fn)
}

func (d *osDir) FileID(base string) (FileID, error) {
	if err := fserr.CheckPath("fileid", base); err != nil {
		return FileID{}, err
	}
	var id FileID
	err := d.use("fileid", base, func(fd int) (err error) {
		id, err = fileIDAt(fd, base)
		return err
	})
	return id, err
}

// Remove unlinks base, or removes it as an empty directory, as os.Remove does.
func (d *osDir) Remove(base string) error {
	if err := fserr.CheckPath("remove", base); err != nil {
		return err
	}
	return d.use("remove", base, func(fd int) error {
		err := unix.Unlinkat(fd, base, 0)
		if err == unix.EISDIR || err == unix.EPERM {
			if rerr := unix.Unlinkat(fd, base, unix.AT_REMOVEDIR); rerr == nil || rerr != unix.ENOTDIR {
				return rerr
			}
		}
		return err
	})
}

// Close lets go of this keeping, and the descriptor with the last.
func (d *osDir) Close() error {
	if d.closed.Swap(true) {
		return nil
	}
	sharedDirs.mu.Lock()
	d.d.refs--
	last := d.d.refs == 0
	if last && sharedDirs.m[d.d.name] == d.d {
		delete(sharedDirs.m, d.d.name)
	}
	sharedDirs.mu.Unlock()
	if !last {
		return nil
	}
	return d.d.close()
}

// DirID is one stat(2), which follows symlinks.
func (osFS) DirID(dir string) (FileID, error) {
	if err := fserr.CheckPath("stat", dir); err != nil {
		return FileID{}, err
	}
	var st unix.Stat_t
	if err := retryEINTR(func() error { return unix.Stat(dir, &st) }); err != nil {
		return FileID{}, &fs.PathError{Op: "stat", Path: dir, Err: err}
	}
	if st.Mode&unix.S_IFMT != unix.S_IFDIR {
		return FileID{}, &fs.PathError{Op: "stat", Path: dir, Err: unix.ENOTDIR}
	}
	return FileID{Dev: uint64(st.Dev), Ino: uint64(st.Ino)}, nil
}
