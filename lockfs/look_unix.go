//go:build unix

package lockfs

import (
	"io"
	"io/fs"
	"path/filepath"
	"runtime"
	"sync"
	"time"

	"github.com/proclock/proclock/internal/fserr"
	"golang.org/x/sys/unix"
)

// OpenLook opens name as OpenNoFollow does, as a bare descriptor
// (internal/fsx's LookOpener): an *os.File would cost two more system
// calls, offering a regular file to the runtime's poller.
func (osFS) OpenLook(name string) (File, error) {
	if err := fserr.CheckPath("open", name); err != nil {
		return nil, err
	}
	fd, err := sysOpen(name, unix.O_RDONLY|noFollow, 0)
	if err != nil {
		return nil, refusedSymlinkAsELOOP(name, &fs.PathError{Op: "open", Path: name, Err: err})
	}
	f := &lookFile{fdBox: fdBox{fd: fd, name: name}}
	f.cleanup = runtime.AddCleanup(f, closeFd, fd)
	return f, nil
}

// closeFd closes the descriptor of a lookFile dropped unclosed.
func closeFd(fd int) { unix.Close(fd) }

// fdBox is a descriptor, its uses kept from racing its close (and reaching
// a number since given to another file).
type fdBox struct {
	mu   sync.RWMutex
	fd   int // -1 once closed
	name string
}

// use runs fn on the descriptor, again when interrupted, unless it is
// closed; it fails as op on path.
func (b *fdBox) use(op, path string, fn func(fd int) error) error {
	b.mu.RLock()
	defer b.mu.RUnlock()
	err := fs.ErrClosed
	if b.fd >= 0 {
		err = retryEINTR(func() error { return fn(b.fd) })
	}
	if err != nil {
		return &fs.PathError{Op: op, Path: path, Err: err}
	}
	return nil
}

// close closes the descriptor once uses are done; an EINTR closed it too.
func (b *fdBox) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	err := fs.ErrClosed
	if b.fd >= 0 {
		err = unix.Close(b.fd)
		b.fd = -1
	}
	if err != nil && err != unix.EINTR {
		return &fs.PathError{Op: "close", Path: b.name, Err: err}
	}
	return nil
}

// lookFile is a File of OpenLook, read-only: writes fail as the kernel
// fails them, without asking it.
type lookFile struct {
	fdBox
	cleanup runtime.Cleanup
}

func (f *lookFile) Name() string { return f.name }

func (f *lookFile) Read(b []byte) (int, error) {
	var n int
	err := f.use("read", f.name, func(fd int) (err error) { n, err = unix.Read(fd, b); return err })
	if err == nil && n == 0 && len(b) > 0 {
		return 0, io.EOF
	}
	return max(n, 0), err
}

func (f *lookFile) ReadAt(b []byte, off int64) (int, error) {
	got := 0
	for got < len(b) {
		var n int
		err := f.use("read", f.name, func(fd int) (err error) { n, err = unix.Pread(fd, b[got:], off+int64(got)); return err })
		if err != nil {
			return got, err
		}
		if n == 0 {
			return got, io.EOF
		}
		got += n
	}
	return got, nil
}

func (f *lookFile) Write([]byte) (int, error) { return 0, f.readOnly("write") }

func (f *lookFile) WriteAt([]byte, int64) (int, error) { return 0, f.readOnly("write") }

func (f *lookFile) Truncate(int64) error { return f.readOnly("truncate") }

func (f *lookFile) readOnly(op string) error {
	return &fs.PathError{Op: op, Path: f.name, Err: unix.EBADF}
}

func (f *lookFile) Stat() (fs.FileInfo, error) {
	info, _, err := f.StatID()
	return info, err
}

// StatID is the file's FileInfo and FileID from one stat (fsx.StatID).
func (f *lookFile) StatID() (fs.FileInfo, FileID, error) {
	var info lookInfo
	var id FileID
	err := f.use("stat", f.name, func(fd int) (err error) {
		info, id, err = statFd(fd, filepath.Base(f.name))
		return err
	})
	if err != nil {
		return nil, FileID{}, err
	}
	return &info, id, nil
}

func (f *lookFile) Close() error {
	f.cleanup.Stop()
	return f.close()
}

// lookInfo is a FileInfo of a lookFile.
type lookInfo struct {
	name  string
	size  int64
	mode  fs.FileMode
	mtime time.Time
}

func (i *lookInfo) Name() string       { return i.name }
func (i *lookInfo) Size() int64        { return i.size }
func (i *lookInfo) Mode() fs.FileMode  { return i.mode }
func (i *lookInfo) ModTime() time.Time { return i.mtime }
func (i *lookInfo) IsDir() bool        { return i.mode.IsDir() }
func (i *lookInfo) Sys() any           { return nil }

// modeOf is an st_mode as package os reads it.
func modeOf(m uint32) fs.FileMode {
	mode := fs.FileMode(m&0o777) | fileTypes[m&unix.S_IFMT]
	for bit, set := range modeBits {
		if m&bit != 0 {
			mode |= set
		}
	}
	return mode
}

var fileTypes = map[uint32]fs.FileMode{
	unix.S_IFBLK: fs.ModeDevice, unix.S_IFCHR: fs.ModeDevice | fs.ModeCharDevice, unix.S_IFDIR: fs.ModeDir,
	unix.S_IFIFO: fs.ModeNamedPipe, unix.S_IFLNK: fs.ModeSymlink, unix.S_IFSOCK: fs.ModeSocket,
}

var modeBits = map[uint32]fs.FileMode{unix.S_ISGID: fs.ModeSetgid, unix.S_ISUID: fs.ModeSetuid, unix.S_ISVTX: fs.ModeSticky}
