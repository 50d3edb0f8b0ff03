package peer

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// TraceEnv names a directory to which each native peer writes, when its
// stress run ends, every filesystem operation the run made, one per line
// with the time in nanoseconds, its pid, the operation, the base name and
// the outcome (an inode, an error): merged by time (sort -n), the lines of
// all peers show the schedule a failed run took (docs/design.md, "Proving
// it natively").
const TraceEnv = "PROCLOCK_PEER_TRACE"

// tracer keeps a peer's events in memory until they are written out.
type tracer struct {
	pid int
	mu  sync.Mutex
	buf strings.Builder
}

// event records one step; a nil tracer records nothing.
func (t *tracer) event(op, name, format string, args ...any) {
	if t == nil {
		return
	}
	now := time.Now().UnixNano()
	t.mu.Lock()
	defer t.mu.Unlock()
	fmt.Fprintf(&t.buf, "%d %d %-8s %-14s ", now, t.pid, op, filepath.Base(name))
	fmt.Fprintf(&t.buf, format, args...)
	t.buf.WriteByte('\n')
}

// flush writes the events to dir and forgets them.
func (t *tracer) flush(dir string) error {
	t.mu.Lock()
	defer t.mu.Unlock()
	name := filepath.Join(dir, fmt.Sprintf("trace-%d.log", t.pid))
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	_, err = f.WriteString(t.buf.String())
	t.buf.Reset()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// traced is p with its FS recording every operation to t (a traceFS). The
// FS keeps the powers of p's that the mechanisms look for, but for
// byte-range locks, which it keeps only with ranged.
func traced(p *platform.Platform, t *tracer, ranged bool) *platform.Platform {
	q := *p
	fsys := &traceFS{inner: p.FS, t: t}
	if rl, ok := p.FS.(lockfs.RangeLocker); ok && ranged {
		q.FS = &traceRangeFS{traceFS: fsys, rl: rl}
	} else {
		q.FS = fsys
	}
	return &q
}

// traceFS is a lockfs.FS that records what it does.
type traceFS struct {
	inner lockfs.FS
	t     *tracer
}

// traceFile is a file opened by a traceFS: writes, truncations and the
// close are recorded.
type traceFile struct {
	lockfs.File
	t   *tracer
	ino uint64
}

func (f *traceFile) Write(b []byte) (int, error) {
	n, err := f.File.Write(b)
	f.t.event("write", f.Name(), "ino=%d n=%d %v", f.ino, n, errText(err))
	return n, err
}

func (f *traceFile) WriteAt(b []byte, off int64) (int, error) {
	n, err := f.File.WriteAt(b, off)
	f.t.event("writeat", f.Name(), "ino=%d n=%d %v", f.ino, n, errText(err))
	return n, err
}

func (f *traceFile) Truncate(size int64) error {
	err := f.File.Truncate(size)
	f.t.event("truncate", f.Name(), "ino=%d %d %v", f.ino, size, errText(err))
	return err
}

func (f *traceFile) Close() error {
	err := f.File.Close()
	f.t.event("close", f.Name(), "ino=%d %v", f.ino, errText(err))
	return err
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return "err=" + err.Error()
}

// raw is the file the inner FS opened, for its own methods.
func raw(f lockfs.File) lockfs.File {
	if tf, ok := f.(*traceFile); ok {
		return tf.File
	}
	return f
}

func (s *traceFS) wrap(op, name string, f lockfs.File, err error, detail string) (lockfs.File, error) {
	if err != nil {
		s.t.event(op, name, "%s %v", detail, errText(err))
		return nil, err
	}
	id, _ := s.inner.FileIDOf(f)
	s.t.event(op, name, "%s ino=%d", detail, id.Ino)
	return &traceFile{File: f, t: s.t, ino: id.Ino}, nil
}

func (s *traceFS) OpenFile(name string, flag int, perm fs.FileMode) (lockfs.File, error) {
	f, err := s.inner.OpenFile(name, flag, perm)
	return s.wrap("open", name, f, err, fmt.Sprintf("flag=%#x", flag))
}

func (s *traceFS) OpenNoFollow(name string) (lockfs.File, error) {
	f, err := s.inner.OpenNoFollow(name)
	return s.wrap("openro", name, f, err, "")
}

func (s *traceFS) Lstat(name string) (fs.FileInfo, error) { return s.inner.Lstat(name) }

func (s *traceFS) Remove(name string) error {
	id, _ := s.inner.FileID(name)
	err := s.inner.Remove(name)
	s.t.event("remove", name, "ino=%d %v", id.Ino, errText(err))
	return err
}

func (s *traceFS) Rename(oldname, newname string) error {
	err := s.inner.Rename(oldname, newname)
	s.t.event("rename", oldname, "to %s %v", filepath.Base(newname), errText(err))
	return err
}

func (s *traceFS) Link(oldname, newname string) error {
	err := s.inner.Link(oldname, newname)
	s.t.event("link", oldname, "to %s %v", filepath.Base(newname), errText(err))
	return err
}

func (s *traceFS) FileID(name string) (lockfs.FileID, error) {
	id, err := s.inner.FileID(name)
	s.t.event("fileid", name, "ino=%d %v", id.Ino, errText(err))
	return id, err
}

func (s *traceFS) FileIDOf(f lockfs.File) (lockfs.FileID, error) {
	return s.inner.FileIDOf(raw(f))
}

func (s *traceFS) DirID(dir string) (lockfs.FileID, error) { return s.inner.DirID(dir) }

func (s *traceFS) TryFlock(f lockfs.File, exclusive bool) (bool, error) {
	fl, ok := s.inner.(fsx.Flocker)
	if !ok {
		return false, lockfs.ErrNoFileID
	}
	got, err := fl.TryFlock(raw(f), exclusive)
	s.t.event("flock", f.Name(), "excl=%v got=%v %v", exclusive, got, errText(err))
	return got, err
}

func (s *traceFS) Unflock(f lockfs.File) error {
	fl, ok := s.inner.(fsx.Flocker)
	if !ok {
		return lockfs.ErrNoFileID
	}
	err := fl.Unflock(raw(f))
	s.t.event("unflock", f.Name(), "%v", errText(err))
	return err
}

func (s *traceFS) PathLimits() (path, name int) {
	if l, ok := s.inner.(fsx.PathLimits); ok {
		return l.PathLimits()
	}
	return 0, 0
}

func (s *traceFS) NetworkFS(dir string) (string, error) {
	if n, ok := s.inner.(lockfs.NetworkFS); ok {
		return n.NetworkFS(dir)
	}
	return "", nil
}

// traceRangeFS is a traceFS with byte-range locks.
type traceRangeFS struct {
	*traceFS
	rl lockfs.RangeLocker
}

func (s *traceRangeFS) OpenLockable(name string) (lockfs.File, error) {
	f, err := s.rl.OpenLockable(name)
	return s.wrap("openrw", name, f, err, "")
}

func (s *traceRangeFS) LockRange(f lockfs.File, off, n int64) error {
	return s.rl.LockRange(raw(f), off, n)
}

func (s *traceRangeFS) TryLockRange(f lockfs.File, off, n int64) (bool, error) {
	got, err := s.rl.TryLockRange(raw(f), off, n)
	s.t.event("lockrange", f.Name(), "got=%v %v", got, errText(err))
	return got, err
}

func (s *traceRangeFS) RangeWriteLocked(f lockfs.File, off, n int64) (bool, error) {
	held, err := s.rl.RangeWriteLocked(raw(f), off, n)
	s.t.event("rangeheld", f.Name(), "held=%v %v", held, errText(err))
	return held, err
}
