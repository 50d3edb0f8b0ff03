package fake

import (
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"runtime"
	"slices"
	"syscall"
	"time"

	"github.com/proclock/proclock/fake/internal/sqlfile"
)

// description is an open file as the filesystem keeps it (POSIX's "open
// file description"), to which locks belong, as OFD locks do. Its fields
// are guarded by memfs.mu.
type description struct {
	m    *memfs
	by   *actor // who opened it
	name string // as given to open

	node     *inode
	readable bool
	writable bool
	off      int64
	closed   bool
	unshared bool // opened without sharing delete (World.WindowsSharing)
}

// file is a handle on an open file, what the FS's opens return. Nothing
// of the world points back at it, so a file its process no longer reaches
// is collected, and closed then, as an *os.File is (docs/testing.md).
type file struct {
	*description
	cleanup runtime.Cleanup
}

func handOut(d *description) *file {
	f := &file{description: d}
	f.cleanup = runtime.AddCleanup(f, (*description).collected, d)
	return f
}

// collected closes d when its file was collected. No hook runs, as for
// Kill's closes: no process performs the close.
func (d *description) collected() { d.m.closeFile(d) }

// noFollow is OpenNoFollow's flag (no os.O_ flag has this bit).
const noFollow = 1 << 30

// openFile is open(2) on the tree; with noFollow a symlink at the last
// element is ELOOP. A file the open creates may be written whatever its mode.
func (m *memfs) openFile(a *actor, name string, flag int, perm fs.FileMode) (*file, error) {
	excl := flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0
	// O_EXCL with O_CREATE never follows a symlink: even a dangling link is EEXIST.
	w, err := m.resolve(name, !excl && flag&noFollow == 0)
	if err != nil {
		return nil, err
	}
	n, writable, readable := w.node, flag&(os.O_WRONLY|os.O_RDWR) != 0, flag&os.O_WRONLY == 0
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, syscall.ENOENT
	case n == nil:
		n = m.newInode(perm.Perm())
		m.addName(w.dir, w.base, n)
	case excl:
		return nil, syscall.EEXIST
	default:
		if err := a.mayOpen(n, flag, readable, writable); err != nil {
			return nil, err
		}
		if flag&os.O_TRUNC != 0 && n.isRegular() {
			n.data, n.mtime = nil, m.now()
		}
	}
	d := &description{m: m, by: a, name: name, node: n, readable: readable, writable: writable}
	m.open[d] = struct{}{}
	n.opens++
	return handOut(d), nil
}

// mayOpen is why a may not open n, which is there, with flag; nil when
// it may.
func (a *actor) mayOpen(n *inode, flag int, readable, writable bool) error {
	switch {
	case flag&noFollow != 0 && n.isSymlink():
		return syscall.ELOOP
	case n.isDir() && (writable || flag&(os.O_CREATE|os.O_TRUNC) != 0):
		return syscall.EISDIR
	case n.isSocket():
		return syscall.ENXIO
	case readable && !a.may(n, permR), (writable || flag&os.O_TRUNC != 0) && !a.may(n, permW):
		return syscall.EACCES
	}
	return nil
}

// release closes d; m.mu is held.
func (m *memfs) release(d *description) {
	if d.closed {
		return
	}
	d.closed = true
	delete(m.open, d)
	d.setLevel(sqlfile.None) // a lock goes with its file
	d.node.opens--
	m.forgetIfGone(d.node)
}

func (m *memfs) closeFile(d *description) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(d)
	m.lookAll()
}

// releaseAllOf closes every handle p has open, as a process's death does.
func (m *memfs) releaseAllOf(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := range m.open {
		if d.by.proc == p {
			m.release(d)
		}
	}
	m.lookAll()
}

// inUse reports whether the world shares files as windows does and n is
// open without sharing delete; m.mu is held.
func (m *memfs) inUse(n *inode) bool {
	for f := range m.open {
		if m.windowsSharing && f.node == n && f.unshared {
			return true
		}
	}
	return false
}

// do runs one operation on f as its owner, with hooks, under the lock.
func do[T any](f *file, op string, verb string, body func() (T, error)) (T, error) {
	return run(f.by, step{op: op, verb: verb, path: f.name, handle: true}, func() (T, error) {
		if f.closed {
			var zero T
			return zero, os.ErrClosed
		}
		return body()
	})
}

func doErr(f *file, op string, verb string, body func() error) error {
	_, err := do(f, op, verb, func() (struct{}, error) { return struct{}{}, body() })
	return err
}

func (f *file) Name() string { return f.name }

func (f *file) Read(p []byte) (int, error) { return f.io(opRead, "read", f.readAt, p, 0, false) }

func (f *file) ReadAt(p []byte, off int64) (int, error) {
	return f.io(opRead, "readat", f.readAt, p, off, true)
}

// Write writes at the offset (no lock uses O_APPEND, which is not kept).
func (f *file) Write(p []byte) (int, error) { return f.io(opWrite, "write", f.writeAt, p, 0, false) }

func (f *file) WriteAt(p []byte, off int64) (int, error) {
	return f.io(opWrite, "writeat", f.writeAt, p, off, true)
}

// io reads or writes p at off, or, unless at, at the offset, moving it.
func (f *file) io(op string, verb string, rw func([]byte, int64) (int, error), p []byte, off int64, at bool) (int, error) {
	return do(f, op, verb, func() (int, error) {
		switch {
		case at && off < 0:
			return 0, syscall.EINVAL
		case at:
			return rw(p, off)
		}
		n, err := rw(p, f.off)
		f.off += int64(n)
		return n, err
	})
}

// readAt reads what is at off; a FIFO or a device has nothing to read.
func (f *file) readAt(p []byte, off int64) (int, error) {
	switch {
	case !f.readable:
		return 0, syscall.EBADF
	case f.node.isDir():
		return 0, syscall.EISDIR
	case len(p) == 0:
		return 0, nil
	case !f.node.isRegular() || off >= int64(len(f.node.data)):
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// writeAt writes p at off, filling any gap with zeros; a FIFO or a device
// keeps nothing.
func (f *file) writeAt(p []byte, off int64) (int, error) {
	switch {
	case !f.writable:
		return 0, syscall.EBADF
	case len(p) == 0:
		return 0, nil
	case !f.node.isRegular():
		return len(p), nil
	}
	f.node.data = resize(f.node.data, max(off+int64(len(p)), int64(len(f.node.data))))
	copy(f.node.data[off:], p)
	f.node.mtime = f.m.now()
	return len(p), nil
}

func resize(data []byte, size int64) []byte {
	if size <= int64(len(data)) {
		return data[:size:size]
	}
	return append(data, make([]byte, size-int64(len(data)))...)
}

func (f *file) Stat() (fs.FileInfo, error) {
	return do(f, opStat, "stat", func() (fs.FileInfo, error) {
		return infoOf(path.Base(sqlfile.Clean(f.name)), f.node), nil
	})
}

// Sync checks the handle: the fake never loses data.
func (f *file) Sync() error { return doErr(f, opSync, "sync", func() error { return nil }) }

func (f *file) Truncate(size int64) error {
	return doErr(f, opTruncate, "truncate", func() error {
		if !f.writable || !f.node.isRegular() || size < 0 {
			return syscall.EINVAL
		}
		f.node.data = resize(f.node.data, size)
		f.node.mtime = f.m.now()
		return nil
	})
}

// Close releases the handle even when a hook fails it, as close(2) does.
func (f *file) Close() error {
	err := doErr(f, opClose, "close", func() error { f.m.release(f.description); return nil })
	if err != nil {
		f.m.closeFile(f.description)
	}
	f.cleanup.Stop()
	return err
}

// Readdirnames lists the names in the directory, in order, all at once.
func (f *file) Readdirnames(n int) ([]string, error) {
	return do(f, opRead, "readdirent", func() ([]string, error) {
		if !f.node.isDir() {
			return nil, syscall.ENOTDIR
		}
		return slices.Sorted(maps.Keys(f.node.entries)), nil
	})
}

type fileInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func infoOf(name string, n *inode) *fileInfo {
	size := int64(len(n.data))
	if n.isSymlink() {
		size = int64(len(n.target))
	}
	return &fileInfo{name: name, size: size, mode: n.mode, mtime: n.mtime}
}

func (fi *fileInfo) Name() string       { return fi.name }
func (fi *fileInfo) Size() int64        { return fi.size }
func (fi *fileInfo) Mode() fs.FileMode  { return fi.mode }
func (fi *fileInfo) ModTime() time.Time { return fi.mtime }
func (fi *fileInfo) IsDir() bool        { return fi.mode.IsDir() }
func (fi *fileInfo) Sys() any           { return nil }
