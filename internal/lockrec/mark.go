package lockrec

import (
	"bytes"
	"errors"
	"io/fs"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// MarkSuffix names a lock's mark: "<path>.holder", the record of a SQLite
// holder, by which processes without SQLite keep out (docs/protocol.md);
// shortened for a long base name (MarkPath).
const MarkSuffix = ".holder"

// MarkPath is the path of the mark of the lock at path (docs/protocol.md,
// "Names").
func MarkPath(path string) string { return Sidecar(path, MarkSuffix) }

// Mark is what was found at a lock's mark.
type Mark struct {
	// Present: something is at the mark's name.
	Present bool
	// Record is the mark's record; nil when it is missing, unreadable,
	// being written, or not a record.
	Record *Record
	// Raw is the mark's bytes, to tell later whether it is still the same.
	Raw []byte
	// Mtime is when the mark was last written; zero when unknown.
	Mtime time.Time
	// name is the mark's path, to judge an Mtime ahead of the clock by
	// (Age).
	name string
	// Err is set when the mark could not be read for want of file
	// descriptors (fsx.Exhausted): present, for safety, but nothing
	// is known of it, and callers report Err rather than a holder.
	Err error
	// junk is set for something that is not a regular file (a symlink,
	// a FIFO, a directory): proclock writes none, so it is no mark.
	junk bool
	// foreign is set for what no proclock process or seed can have
	// written there: a FIFO, socket, device or directory, a file over
	// MaxSize, or bytes that are neither a record, nor empty, nor a strict
	// prefix of one of our records (docs/protocol.md, "Judging what is
	// there"). It is a user's, and never removed.
	foreign bool
}

// Foreign reports whether what is at the mark's name is not a mark but a
// user's file, which nobody may remove.
func (m Mark) Foreign() bool { return m.foreign }

// Names reports whether the mark's writer locked the file id names.
func (m Mark) Names(id lockfs.FileID) bool {
	return m.Record != nil && m.Record.LockIno != 0 && m.Record.LockDev == id.Dev && m.Record.LockIno == id.Ino
}

// MarkWindow is how long a mark that does not parse (empty or cut: its
// writer crashed or stalls between creating it and writing it) keeps
// others out: as long as a stamp not yet written does.
const MarkWindow = 30 * time.Second

// Holder is the identity the mark names, or nil when unknown.
func (m Mark) Holder() *platform.Identity { return m.Record.Holder() }

// ReadHolder returns what the mark of the lock at path says, or nil when it
// is missing, unreadable, or names no holder (Record.Known).
func ReadHolder(fsys lockfs.FS, path string) *Record {
	m := ReadMark(fsys, path)
	if !m.Record.Known() {
		return nil
	}
	return m.Record
}

// ReadMark reads the mark of the lock at path, never following a symlink.
// A mark that cannot be read is present, its holder unknown. A mark whose
// name the filesystem calls too long is absent, nobody can have made it,
// when its path is known to fit (fsx.PathLimits): then the name is what
// is too long, on a filesystem whose NAME_MAX is below 255, not the path,
// which another process might name shorter.
func ReadMark(fsys lockfs.FS, path string) Mark {
	name := MarkPath(path)
	f, err := fsx.OpenLook(fsys, name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, lockfs.ErrNameTooLong) && pathFits(fsys, name) {
		return Mark{}
	}
	if fsx.Exhausted(err) {
		return Mark{Present: true, Err: err}
	}
	if err != nil {
		if info, lerr := fsys.Lstat(name); lerr == nil && !info.Mode().IsRegular() {
			// A symlink, a socket: not a mark.
			return Mark{Present: true, junk: true, foreign: info.Mode()&fs.ModeSymlink == 0}
		}
		return Mark{Present: true}
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
	data, err := readOnce(f, info.Size()+1) // a byte more: a mark that grew is junk
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

// pathFits reports whether fsys is known to take a path as long as name.
func pathFits(fsys lockfs.FS, name string) bool {
	limits, ok := fsys.(fsx.PathLimits)
	if !ok {
		return false
	}
	pathMax, _ := limits.PathLimits()
	return pathMax > 0 && len(name) <= pathMax
}

// Live reports whether the mark keeps others out: it names a holder that
// is alive, or one that cannot be judged from here (another host or pid
// namespace, an unknown holder, an unreadable mark, or here unknown), or it
// is being written. Only a mark of a writer gone for certain, or no mark,
// lets others in.
func (m Mark) Live(p *platform.Platform, here *platform.Identity) bool {
	return m.Present && !m.Dead(p, here)
}

// Dead reports whether the mark's writer is gone for certain: its record
// names a holder judged dead from here, or the mark never got a record and
// is older than MarkWindow.
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

// CreateMark creates the mark of the lock at path with rec, exclusively
// and whole (CreateWhole): it fails with an error matching fs.ErrExist
// when a mark is there, and never replaces one.
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

// RemoveMarkIf removes the mark of the lock at path when its bytes are
// still raw; a mark that is gone or another one is left alone.
func RemoveMarkIf(fsys lockfs.FS, path string, raw []byte) error {
	m := ReadMark(fsys, path)
	if !m.Present || !bytes.Equal(m.Raw, raw) {
		return nil
	}
	if err := fsys.Remove(MarkPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
