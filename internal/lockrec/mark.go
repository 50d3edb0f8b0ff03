package lockrec

import (
	"bytes"
	"errors"
	"io"
	"io/fs"

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
}

// Holder is the identity the mark names, or nil when unknown.
func (m Mark) Holder() *platform.Identity { return m.Record.Holder() }

// ReadMark reads the mark of the lock at path, never following a symlink.
// A mark that cannot be read is present, its holder unknown. A mark whose
// name the filesystem calls too long is absent, nobody can have made it,
// when its path is known to fit (lockfs.PathLimits): then the name is what
// is too long, on a filesystem whose NAME_MAX is below 255, not the path,
// which another process might name shorter.
func ReadMark(fsys lockfs.FS, path string) Mark {
	name := MarkPath(path)
	f, err := fsys.OpenNoFollow(name)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, lockfs.ErrNameTooLong) && pathFits(fsys, name) {
		return Mark{}
	}
	if err != nil {
		return Mark{Present: true}
	}
	defer f.Close()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return Mark{Present: true}
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil || len(data) > MaxSize {
		return Mark{Present: true}
	}
	m := Mark{Present: true, Raw: data}
	if r, err := Parse(data); err == nil {
		m.Record = &r
	}
	return m
}

// pathFits reports whether fsys is known to take a path as long as name.
func pathFits(fsys lockfs.FS, name string) bool {
	limits, ok := fsys.(lockfs.PathLimits)
	if !ok {
		return false
	}
	pathMax, _ := limits.PathLimits()
	return pathMax > 0 && len(name) <= pathMax
}

// Live reports whether the mark keeps others out: it names a holder that
// is alive, or one that cannot be judged from here (another host or pid
// namespace, an unknown holder, an unreadable mark, or here unknown).
// Only a mark of a holder dead for certain, or no mark, lets others in.
func (m Mark) Live(p *platform.Platform, here *platform.Identity) bool {
	switch {
	case !m.Present:
		return false
	case !m.Record.Known() || here == nil || p.Process == nil:
		return true
	}
	return platform.Judge(*here, m.Record.Identity, p.Process.Lookup).Verdict != platform.Dead
}

// CreateMark creates the mark of the lock at path with rec, exclusively:
// it fails with an error matching fs.ErrExist when a mark is there, and
// never replaces one.
func CreateMark(fsys lockfs.FS, path string, rec Record) error {
	name := MarkPath(path)
	f, err := fsys.OpenFile(name, lockfs.CreateExcl, FileMode)
	if err != nil {
		return err
	}
	_, err = f.Write(rec.Marshal())
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
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
