package fake

import (
	"io/fs"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/proclock/proclock/fake/internal/sqlfile"
	"github.com/proclock/proclock/internal/fsx"
)

const (
	dev     = 1  // the device number of the world's one filesystem
	maxHops = 40 // symlinks one path may go through before ELOOP, as linux counts
)

// The owner's permission bits: every process owns every file.
const (
	permR fs.FileMode = 0o400
	permW fs.FileMode = 0o200
)

// inode is a file, whatever its names. Its fields are guarded by memfs.mu.
type inode struct {
	ino     uint64
	mode    fs.FileMode       // type bits and permissions
	nlink   uint64            // names, for a file other than a directory
	data    []byte            // regular files
	target  string            // symlinks, as given
	entries map[string]*inode // directories
	mtime   time.Time
	birth   time.Time
	opens   int  // open handles; with nlink, whether it is gone
	gone    bool // its number freed
	// locks is the inode's lock table: the SQLite level of each open file
	// that holds one (sqlfile.go); unlocked, when not nil, is closed when
	// one is let go or weakened, for LockRange's waits.
	locks    map[*description]sqlfile.Level
	unlocked chan struct{}
}

// freeFor reports whether no open file of n but d's holds a lock on it;
// memfs.mu is held.
func (n *inode) freeFor(d *description) bool {
	for g := range n.locks {
		if g != d {
			return false
		}
	}
	return true
}

func (n *inode) isDir() bool     { return n.mode.IsDir() }
func (n *inode) isSymlink() bool { return n.mode&fs.ModeSymlink != 0 }
func (n *inode) isRegular() bool { return n.mode.IsRegular() }
func (n *inode) isSocket() bool  { return n.mode&fs.ModeSocket != 0 }

// memfs is the one filesystem every host of a world shares. One mutex
// guards the tree, every inode and every open handle, which makes each
// operation atomic.
type memfs struct {
	mu      sync.Mutex
	root    *inode
	nextIno uint64
	freeIno []uint64 // gone inodes' numbers, in order: the lowest goes first, as on ext4
	clock   *clock
	hooks   *hooks
	// open holds the open files' descriptions, never the files handed
	// out, so that those are collected (file.go).
	open           map[*description]struct{}
	world          *actor // the world's own: root, no process
	windowsSharing bool
	watches        map[*watch]struct{} // the kept ones (wake.go)
}

func newMemFS(c *clock, h *hooks) *memfs {
	m := &memfs{nextIno: 2, clock: c, hooks: h, open: make(map[*description]struct{}), watches: make(map[*watch]struct{})}
	m.world = &actor{m: m}
	m.root = m.newInode(fs.ModeDir | 0o755)
	m.addName(m.root, "tmp", m.newInode(fs.ModeDir|fs.ModeSticky|0o777))
	return m
}

// where is what a path resolves to.
type where struct {
	dir     *inode // the directory holding the last element; nil for "/"
	dirPath string // dir's path, with no symlink in it
	base    string // the last element
	node    *inode // what is there; nil when nothing is
}

// resolve walks name, following symlinks in intermediate elements and,
// when follow is set, in the last one. A missing last element is no
// error: where.node is nil. A trailing slash is cleaned away (proclock
// refuses a lock path ending in the OS's separator before any call).
func (m *memfs) resolve(name string, follow bool) (where, error) {
	p, hops := sqlfile.Clean(name), 0
walk:
	for p != "/" {
		parts := strings.Split(p[1:], "/")
		cur, curPath := m.root, "/"
		for i, part := range parts {
			if !cur.isDir() {
				return where{}, syscall.ENOTDIR
			}
			child := cur.entries[part]
			last := i == len(parts)-1
			if child != nil && child.isSymlink() && (!last || follow) {
				if hops++; hops > maxHops {
					return where{}, syscall.ELOOP
				}
				p = expandLink(curPath, child.target, parts[i+1:])
				continue walk
			}
			if last {
				return where{dir: cur, dirPath: curPath, base: part, node: child}, nil
			}
			if child == nil {
				return where{}, syscall.ENOENT
			}
			cur, curPath = child, path.Join(curPath, part)
		}
	}
	return where{node: m.root}, nil
}

// expandLink is the path a walk continues with after a symlink in dir.
func expandLink(dir, target string, rest []string) string {
	target = filepath.ToSlash(target)
	if !strings.HasPrefix(target, "/") {
		target = path.Join(dir, target)
	}
	return path.Join(append([]string{target}, rest...)...)
}

func (m *memfs) now() time.Time { return m.clock.Now() }

// newInode makes an inode with the lowest free number and the clock's
// birth time, which a gone file with that number may have had too, as on
// a filesystem whose times are coarser than the steps between.
func (m *memfs) newInode(mode fs.FileMode) *inode {
	now := m.now()
	ino := m.nextIno
	if len(m.freeIno) > 0 {
		ino, m.freeIno = m.freeIno[0], m.freeIno[1:]
	} else {
		m.nextIno++
	}
	n := &inode{ino: ino, mode: mode, mtime: now, birth: now}
	if n.isDir() {
		n.entries = make(map[string]*inode)
	}
	return n
}

func (m *memfs) addName(dir *inode, base string, n *inode) {
	dir.entries[base] = n
	n.nlink++
	dir.mtime = m.now()
}

// dropName takes a name away and returns what it named, for forgetIfGone.
func (m *memfs) dropName(dir *inode, base string) *inode {
	n := dir.entries[base]
	n.nlink--
	delete(dir.entries, base)
	dir.mtime = m.now()
	return n
}

// forgetIfGone frees n's number once n has no name and no open handle; a
// SQLite temporary file (ino 0) has none.
func (m *memfs) forgetIfGone(n *inode) {
	if n == nil || n.ino == 0 || n.gone || n.nlink > 0 || n.opens > 0 {
		return
	}
	n.gone = true
	i, _ := slices.BinarySearch(m.freeIno, n.ino)
	m.freeIno = slices.Insert(m.freeIno, i, n.ino)
}

func (m *memfs) stat(name string, follow bool) (fs.FileInfo, error) {
	w, err := m.existing(name, follow)
	if err != nil {
		return nil, err
	}
	return infoOf(path.Base(sqlfile.Clean(name)), w.node), nil
}

// freeName resolves name, where something new is to be made: nothing may
// be there, not even a dangling symlink.
func (m *memfs) freeName(name string) (where, error) {
	w, err := m.resolve(name, false)
	switch {
	case err != nil:
		return where{}, err
	case w.node != nil || w.dir == nil:
		return where{}, syscall.EEXIST
	}
	return w, nil
}

// make makes a directory, a symlink to target, or a node with no data.
func (m *memfs) make(name string, mode fs.FileMode, target string) error {
	w, err := m.freeName(name)
	if err == nil {
		n := m.newInode(mode)
		n.target = target
		m.addName(w.dir, w.base, n)
	}
	return err
}

// modeBits keeps the bits that chmod and mkdir honour.
func modeBits(perm fs.FileMode) fs.FileMode {
	return perm & (fs.ModePerm | fs.ModeSetuid | fs.ModeSetgid | fs.ModeSticky)
}

func (m *memfs) remove(name string) error {
	w, err := m.existing(name, false)
	switch {
	case err != nil:
		return err
	case w.dir == nil:
		return syscall.EBUSY
	case w.node.isDir() && len(w.node.entries) > 0:
		return syscall.ENOTEMPTY
	case m.inUse(w.node):
		return fsx.ErrInUse
	}
	m.forgetIfGone(m.dropName(w.dir, w.base))
	return nil
}

// rename is rename(2), in one step.
func (m *memfs) rename(oldname, newname string) error {
	from, err := m.existing(oldname, false)
	if err != nil {
		return err
	}
	to, err := m.resolve(newname, false)
	switch {
	case err != nil:
		return err
	case from.dir == nil || to.dir == nil:
		return syscall.EBUSY
	case from.node == to.node:
		return nil // two names of one file: rename(2) does nothing
	}
	if err := movable(from, to); err != nil {
		return err
	}
	if m.inUse(from.node) || m.inUse(to.node) {
		return fsx.ErrInUse
	}
	if to.node != nil {
		m.dropName(to.dir, to.base)
	}
	m.dropName(from.dir, from.base)
	m.addName(to.dir, to.base, from.node)
	m.forgetIfGone(to.node)
	return nil
}

// movable is why rename(2) refuses to move from to to, a directory's
// checks apart from a file's; nil when it does not.
func movable(from, to where) error {
	if !from.node.isDir() {
		if to.node != nil && to.node.isDir() {
			return syscall.EISDIR
		}
		return nil
	}
	switch old := path.Join(from.dirPath, from.base); {
	case to.dirPath == old || strings.HasPrefix(to.dirPath, old+"/"):
		return syscall.EINVAL // a directory cannot move into itself
	case to.node == nil:
		return nil
	case !to.node.isDir():
		return syscall.ENOTDIR
	case len(to.node.entries) > 0:
		return syscall.ENOTEMPTY
	}
	return nil
}

// link gives the file at oldname (a symlink itself, not its target) the
// name newname.
func (m *memfs) link(oldname, newname string) error {
	from, err := m.existing(oldname, false)
	if err != nil {
		return err
	}
	if from.node.isDir() {
		return syscall.EPERM
	}
	to, err := m.freeName(newname)
	if err == nil {
		m.addName(to.dir, to.base, from.node)
	}
	return err
}

// existing resolves name, which must exist (ENOENT otherwise).
func (m *memfs) existing(name string, follow bool) (where, error) {
	w, err := m.resolve(name, follow)
	if err == nil && w.node == nil {
		err = syscall.ENOENT
	}
	return w, err
}
