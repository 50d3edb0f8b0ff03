package lockrec

import (
	"bytes"
	"errors"
	"io/fs"
	"reflect"
	"sync"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// MarkSuffix names a lock's mark, "<path>.holder": a SQLite holder's
// record, which keeps file-mechanism processes out (docs/protocol.md).
const MarkSuffix = ".holder"

// MarkPath is the path of the mark of the lock at path.
func MarkPath(path string) string { return Sidecar(path, MarkSuffix) }

// Mark is what was found at a lock's mark.
type Mark struct {
	Present bool      // something is at the mark's name
	Record  *Record   // nil when missing, unreadable, being written or no record
	Raw     []byte    // its bytes, to tell later whether it is the same
	Mtime   time.Time // zero when unknown
	name    string    // its path, for Age
	Err     error     // out of descriptors (fsx.Exhausted): present, nothing known
	junk    bool      // no regular file (proclock writes none): no mark
	foreign bool      // what no proclock process can have written there
}

// Foreign reports whether what is at the mark's name is a user's file,
// never removed (docs/protocol.md, "Judging what is there").
func (m Mark) Foreign() bool { return m.foreign }

// Names reports whether the mark's writer locked the file id names.
func (m Mark) Names(id lockfs.FileID) bool {
	return m.Record != nil && m.Record.LockIno != 0 && m.Record.LockDev == id.Dev && m.Record.LockIno == id.Ino
}

// MarkWindow is how long a mark, or a lock file, without a whole record
// keeps others out: its writer may be between creating and writing it.
const MarkWindow = 30 * time.Second

// Age is how long ago, by p's clock, the file name (id) was written at
// mtime; an mtime ahead of the clock counts from first sight
// (docs/protocol.md, "Judging what is there").
func Age(p *platform.Platform, id lockfs.FileID, name string, mtime time.Time) time.Duration {
	clock := p.Time()
	now := clock.Now()
	if age := now.Sub(mtime); age >= 0 {
		return age
	}
	if mtime.Sub(now) > MarkWindow {
		return MarkWindow + time.Nanosecond
	}
	k := aheadKey{name: name, dev: id.Dev, ino: id.Ino, mtime: mtime.UnixNano()}
	if reflect.TypeOf(clock).Comparable() {
		k.clock = clock
	}
	aheadMu.Lock()
	defer aheadMu.Unlock()
	at, ok := ahead[k]
	if !ok || at.After(now) {
		if len(ahead) >= maxAhead {
			clear(ahead) // at worst, a file's window starts again
		}
		ahead[k], at = now, now
	}
	return now.Sub(at)
}

// ahead remembers when this process first saw each file whose mtime was
// ahead of its clock (docs/design.md, "Module state").
var (
	aheadMu sync.Mutex
	ahead   = map[aheadKey]time.Time{}
)

const maxAhead = 1024

type aheadKey struct {
	clock    any // the clock read (a fake world's differs from another's)
	name     string
	dev, ino uint64
	mtime    int64
}

// Holder is the identity the mark names, or nil when unknown.
func (m Mark) Holder() *platform.Identity { return m.Record.Holder() }

// ReadHolder returns the mark's record at path when it names a holder.
func ReadHolder(fsys lockfs.FS, path string) *Record {
	if r := ReadMark(fsys, path).Record; r.Known() {
		return r
	}
	return nil
}

// ReadMark reads the mark of the lock at path, never following a symlink;
// one unreadable is present, holder unknown. A name too long for a path
// known to fit (fsx.PathLimits) is absent: no one can have made it.
func ReadMark(fsys lockfs.FS, path string) Mark {
	name := MarkPath(path)
	f, err := fsx.OpenLook(fsys, name)
	if err != nil {
		return unopenedMark(fsys, name, err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return Mark{Present: true}
	}
	if !info.Mode().IsRegular() {
		return Mark{Present: true, junk: true, foreign: true}
	}
	if info.Size() > MaxSize {
		return Mark{Present: true, Mtime: info.ModTime(), foreign: true}
	}
	data, err := readOnce(f, info.Size()+1) // a byte more, to see one that grew
	if err != nil || len(data) > MaxSize {
		return Mark{Present: true}
	}
	m := Mark{Present: true, Raw: data, Mtime: info.ModTime(), name: name}
	if r, err := Parse(data); err == nil {
		m.Record = &r
	} else if len(data) > 0 && !isTorn(data) {
		m.foreign = true
	}
	return m
}

// unopenedMark is the mark at name that failed to open with err.
func unopenedMark(fsys lockfs.FS, name string, err error) Mark {
	switch {
	case errors.Is(err, fs.ErrNotExist) || errors.Is(err, lockfs.ErrNameTooLong) && pathFits(fsys, name):
		return Mark{}
	case fsx.Exhausted(err):
		return Mark{Present: true, Err: err}
	}
	if info, lerr := fsys.Lstat(name); lerr == nil && !info.Mode().IsRegular() {
		return Mark{Present: true, junk: true, foreign: info.Mode()&fs.ModeSymlink == 0}
	}
	return Mark{Present: true}
}

// pathFits reports whether fsys is known to take a path as long as name.
func pathFits(fsys lockfs.FS, name string) bool {
	if limits, ok := fsys.(fsx.PathLimits); ok {
		pathMax, _ := limits.PathLimits()
		return pathMax > 0 && len(name) <= pathMax
	}
	return false
}

// Live reports whether the mark keeps others out: present and not Dead.
func (m Mark) Live(p *platform.Platform, here *platform.Identity) bool {
	return m.Present && !m.Dead(p, here)
}

// Dead reports whether the mark's writer is gone for certain: judged dead
// from here, or no record past MarkWindow (or no mark at all: junk).
func (m Mark) Dead(p *platform.Platform, here *platform.Identity) bool {
	switch {
	case !m.Present:
		return false
	case m.junk:
		return true
	case m.Record == nil:
		return !m.Mtime.IsZero() && Age(p, lockfs.FileID{}, m.name, m.Mtime) > MarkWindow
	case !m.Record.Known() || here == nil || p.Process == nil:
		return false
	}
	return platform.Judge(*here, m.Record.Identity, p.Process.Lookup).Verdict == platform.Dead
}

// CreateMark creates the mark of the lock at path with rec (CreateWhole):
// fs.ErrExist when one is there.
func CreateMark(fsys lockfs.FS, path string, rec Record) error {
	name := MarkPath(path)
	f, placed, err := CreateWhole(fsys, name, rec.Marshal(), rec.PID)
	if f != nil {
		if cerr := f.Close(); err == nil {
			err = cerr
		}
	}
	if err != nil && placed {
		fsys.Remove(name)
	}
	return err
}

// RemoveMarkIf removes the mark of the lock at path if its bytes are raw.
func RemoveMarkIf(fsys lockfs.FS, path string, raw []byte) error {
	if m := ReadMark(fsys, path); m.Present && bytes.Equal(m.Raw, raw) {
		if err := fsys.Remove(MarkPath(path)); !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}
