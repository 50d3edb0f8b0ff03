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

	"github.com/proclock/proclock/internal/fsx"
)

// description is an open file as the filesystem keeps it (POSIX's "open
// file description"): the inode, not the name, so that after a remove or
// a rename it still reads and writes the same file; who opened it, how,
// and its offset. The memfs keeps the description of every open file,
// and SQLite's locks belong to descriptions, as OFD locks do. Its fields
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
	// unshared: opened without sharing delete (SQLite's VFS, under
	// World.WindowsSharing): the file cannot be removed or renamed while
	// this is open.
	unshared bool
}

// file is a handle on an open file, what the FS's opens return. Nothing
// of the world points back at it (not the memfs, not the lock table), so
// a file that its process no longer reaches is collected, and closed then,
// as an *os.File's cleanup closes its descriptor (docs/testing.md, "The
// fake world").
type file struct {
	*description
	cleanup runtime.Cleanup
}

// handOut makes the file that the process holds of d, which, collected
// unclosed, closes d.
func handOut(d *description) *file {
	f := &file{description: d}
	f.cleanup = runtime.AddCleanup(f, (*description).collected, d)
	return f
}

// collected closes d when its file was collected: on the runtime's
// cleanup goroutine, so it takes m.mu. As with Kill's closes, no hook
// runs: no process performs the close, and a hook that blocked would
// hold up the collector's cleanups.
func (d *description) collected() { d.m.closeFile(d) }

// noFollow is an open flag of the fake's own (no os.O_ flag has this bit):
// OpenNoFollow's.
const noFollow = 1 << 30

// openFile is open(2) on the tree: it resolves name, creates the file when
// asked, checks permissions and registers the handle as open. With
// noFollow a symlink at the last element is ELOOP.
func (m *memfs) openFile(a *actor, name string, flag int, perm fs.FileMode) (*file, error) {
	excl := flag&os.O_CREATE != 0 && flag&os.O_EXCL != 0
	// O_EXCL with O_CREATE never follows a symlink at the last element:
	// whatever is there, even a dangling link, means EEXIST.
	w, err := m.resolve(a, name, !excl && flag&noFollow == 0)
	switch {
	case err != nil:
		return nil, err
	case flag&noFollow != 0 && w.node != nil && w.node.isSymlink():
		return nil, syscall.ELOOP
	}
	writable := flag&(os.O_WRONLY|os.O_RDWR) != 0
	readable := flag&os.O_WRONLY == 0
	n, created := w.node, false
	switch {
	case n == nil && flag&os.O_CREATE == 0:
		return nil, syscall.ENOENT
	case n == nil && hasTrailingSlash(name):
		return nil, syscall.EISDIR
	case n == nil && !a.mayChange(w.dir):
		return nil, syscall.EACCES
	case n == nil:
		n, created = m.newInode(perm.Perm()), true
		m.addName(w.dir, w.base, n)
	case excl:
		return nil, syscall.EEXIST
	}
	if err := mayOpen(a, n, flag, readable, writable, created); err != nil {
		return nil, err
	}
	if flag&os.O_TRUNC != 0 && n.isRegular() && !created {
		n.data = nil
		n.mtime = m.now()
	}
	d := &description{m: m, by: a, name: name, node: n, readable: readable, writable: writable}
	m.open[d] = struct{}{}
	n.opens++
	return handOut(d), nil
}

// mayOpen decides whether n may be opened with flag. A file the open just
// created may be written whatever its mode, as with open(2).
func mayOpen(a *actor, n *inode, flag int, readable, writable, created bool) error {
	switch {
	case n.isDir() && (writable || flag&(os.O_CREATE|os.O_TRUNC) != 0):
		return syscall.EISDIR
	case n.isSocket():
		return syscall.ENXIO
	case created:
		return nil
	case readable && !a.may(n, permR):
		return syscall.EACCES
	case (writable || flag&os.O_TRUNC != 0) && !a.may(n, permW):
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
	dropLock(d.node, d) // an SQLite lock goes with its file
	d.node.opens--
	m.forgetIfGone(d.node)
}

// closeFile closes d, taking m.mu.
func (m *memfs) closeFile(d *description) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.release(d)
}

// releaseAllOf closes every handle p has open, as the kernel does when a
// process dies.
func (m *memfs) releaseAllOf(p *Process) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for d := range m.open {
		if d.by.proc == p {
			m.release(d)
		}
	}
}

// inUse is fsx.ErrInUse when the world shares files as windows does
// and n is open without sharing delete; m.mu is held.
func (m *memfs) inUse(n *inode) error {
	if !m.windowsSharing || n == nil {
		return nil
	}
	for f := range m.open {
		if f.node == n && f.unshared {
			return fsx.ErrInUse
		}
	}
	return nil
}

// countOpen counts the open handles of p, or of everyone when p is nil.
func (m *memfs) countOpen(p *Process) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	n := 0
	for d := range m.open {
		if p == nil || d.by.proc == p {
			n++
		}
	}
	return n
}

// do runs one operation on f as f's owner, with hooks, under the lock.
// A closed handle fails with os.ErrClosed, one of a killed process with
// ErrKilled.
func do[T any](f *file, op Op, verb string, body func() (T, error)) (T, error) {
	return run(f.by, step{op: op, verb: verb, path: f.name, handle: true}, func() (T, error) {
		if f.closed {
			var zero T
			return zero, os.ErrClosed
		}
		if op == OpLock && f.by.proc != nil {
			defer f.by.proc.sawLocks(f.node, f.description)
		}
		return body()
	})
}

// doErr is do for an operation that returns only an error.
func doErr(f *file, op Op, verb string, body func() error) error {
	_, err := do(f, op, verb, func() (struct{}, error) { return struct{}{}, body() })
	return err
}

// Name returns the name the file was opened with.
func (f *file) Name() string { return f.name }

// Read reads from the current offset. It returns fewer bytes than asked
// only at the end of the file, and then with io.EOF.
func (f *file) Read(p []byte) (int, error) { return f.io(OpRead, "read", f.readAt, p, 0, false) }

// ReadAt reads at off without moving the offset.
func (f *file) ReadAt(p []byte, off int64) (int, error) {
	return f.io(OpRead, "readat", f.readAt, p, off, true)
}

// Write writes at the offset. (O_APPEND is not supported: no lock uses it.)
func (f *file) Write(p []byte) (int, error) { return f.io(OpWrite, "write", f.writeAt, p, 0, false) }

// WriteAt writes at off without moving the offset.
func (f *file) WriteAt(p []byte, off int64) (int, error) {
	return f.io(OpWrite, "writeat", f.writeAt, p, off, true)
}

// io reads or writes p at off, or, unless at, at the offset, moving it.
func (f *file) io(op Op, verb string, rw func([]byte, int64) (int, error), p []byte, off int64, at bool) (int, error) {
	return do(f, op, verb, func() (int, error) {
		if at {
			if off < 0 {
				return 0, syscall.EINVAL
			}
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
	case !f.node.isRegular():
		return 0, io.EOF
	}
	if off >= int64(len(f.node.data)) {
		return 0, io.EOF
	}
	n := copy(p, f.node.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// writeAt writes p at off, filling any gap with zeros. A FIFO or a device
// takes the bytes and keeps nothing.
func (f *file) writeAt(p []byte, off int64) (int, error) {
	switch {
	case !f.writable:
		return 0, syscall.EBADF
	case len(p) == 0:
		return 0, nil
	case !f.node.isRegular():
		return len(p), nil
	}
	end := off + int64(len(p))
	f.node.data = resize(f.node.data, max(end, int64(len(f.node.data))))
	copy(f.node.data[off:], p)
	f.node.mtime = f.m.now()
	return len(p), nil
}

// resize returns data grown with zeros or cut to size.
func resize(data []byte, size int64) []byte {
	if size <= int64(len(data)) {
		return data[:size:size]
	}
	return append(data, make([]byte, size-int64(len(data)))...)
}

// Stat describes the open file, even when it has no name left.
func (f *file) Stat() (fs.FileInfo, error) {
	return do(f, OpStat, "stat", func() (fs.FileInfo, error) {
		return infoOf(path.Base(clean(f.name)), f.node), nil
	})
}

// Sync does nothing more than check the handle: the fake never loses data.
func (f *file) Sync() error { return doErr(f, OpSync, "sync", func() error { return nil }) }

// Truncate cuts or extends the file to size.
func (f *file) Truncate(size int64) error {
	return doErr(f, OpTruncate, "truncate", func() error {
		if !f.writable || !f.node.isRegular() || size < 0 {
			return syscall.EINVAL
		}
		f.node.data = resize(f.node.data, size)
		f.node.mtime = f.m.now()
		return nil
	})
}

// Close closes the handle. A second Close fails with os.ErrClosed. Even a
// Close that a hook fails releases the handle, as close(2) does.
func (f *file) Close() error {
	err := doErr(f, OpClose, "close", func() error { f.m.release(f.description); return nil })
	if err != nil {
		f.m.closeFile(f.description)
	}
	f.cleanup.Stop() // closed: nothing is left for the collector to do
	return err
}

// Readdirnames lists the names in the directory, in name order, all at
// once whatever n is (as conformance snapshots a directory).
func (f *file) Readdirnames(n int) ([]string, error) {
	return do(f, OpRead, "readdirent", func() ([]string, error) {
		if !f.node.isDir() {
			return nil, syscall.ENOTDIR
		}
		return slices.Sorted(maps.Keys(f.node.entries)), nil
	})
}

// fileInfo is a snapshot of an inode, taken under the lock.
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

// Sys returns nil: a file's identity is FileID's.
func (fi *fileInfo) Sys() any { return nil }
