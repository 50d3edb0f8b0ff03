package lockrec

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"time"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// ErrNotLockFile is matched by the error for a file at a lock's path that
// is not recognisably a lock file (Kind Foreign): proclock never removes
// or changes it.
var ErrNotLockFile = errors.New("not a lock file")

// ErrReadOnly is matched by the error of an attempt on a lock that is not
// held (free, or stale and so to be rewritten in place) whose file this
// user can read but not write: a lock shared by a group whose file is not
// group-writable (docs/security.md). It matches fs.ErrPermission too.
var ErrReadOnly = fmt.Errorf("lock file readable but not writable by this user: %w", fs.ErrPermission)

// Sighting is what was read of a file, to judge it and to tell later
// whether the file at the path is still the same one.
type Sighting struct {
	Kind Kind
	// Stamp is the stamp parsed from Content, when Kind is Stamp.
	Stamp   *Record
	Content []byte
	ID      lockfs.FileID
	Size    int64
	Mtime   time.Time
}

// Same reports whether a and b saw the same file, unchanged.
func (a Sighting) Same(b Sighting) bool {
	return a.ID.Same(b.ID) && a.Size == b.Size && a.Mtime.Equal(b.Mtime) && bytes.Equal(a.Content, b.Content)
}

// Read reads the file at path without following a symlink and without
// blocking, and classifies it. A file that is not a regular file, or is
// larger than MaxSize, or fails to read, is Foreign. A missing file is
// fs.ErrNotExist; a directory, a permission failure or running out of
// file descriptors (fsx.Exhausted) is an error.
func Read(fsys lockfs.FS, path string) (Sighting, error) {
	f, err := fsx.OpenLook(fsys, path)
	if err != nil {
		return openFailed(fsys, path, err)
	}
	defer f.Close()
	return sightOpen(fsys, path, f)
}

// openFailed is Read of a file that failed to open with err.
func openFailed(fsys lockfs.FS, path string, err error) (Sighting, error) {
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || fsx.Exhausted(err) {
		return Sighting{}, err
	}
	// A symlink, a socket, or anything else that does not open.
	return lstatSighting(fsys, path)
}

// sightOpen is Read of f, the file at path, opened.
func sightOpen(fsys lockfs.FS, path string, f lockfs.File) (Sighting, error) {
	s, err := Sight(fsys, f)
	if errors.Is(err, errNoStat) {
		return lstatSighting(fsys, path)
	}
	return s, err
}

// errNoStat says an open file could not be stat'ed.
var errNoStat = errors.New("lockrec: open file could not be stat'ed")

// Sight reads and classifies f, a file open for reading, as Read does the
// file at a path: for a caller that is to write the very file it judges,
// which a read by path and an open after it cannot promise (another file
// may have taken the path and its inode number in between).
func Sight(fsys lockfs.FS, f lockfs.File) (Sighting, error) {
	// One stat for both where the file can (fsx.StatID); without an
	// identity, size, time and bytes still tell files apart.
	info, id, err := fsx.StatID(fsys, f)
	if err != nil {
		return Sighting{}, fmt.Errorf("%w: %w", errNoStat, err)
	}
	return sightAfter(f, info, id)
}

// sightAfter is Sight once f's stat before the read is info, and its
// identity id.
func sightAfter(f lockfs.File, info fs.FileInfo, id lockfs.FileID) (Sighting, error) {
	if info.IsDir() {
		return Sighting{}, &fs.PathError{Op: "open", Path: f.Name(), Err: lockfs.ErrIsDir}
	}
	s := Sighting{Kind: Foreign, ID: id}
	info, data, err := readStable(f, info)
	var kind Kind
	var stamp *Record
	// A read that met a writer's one write in place (Cover) may join the
	// new bytes' start to the old ones' end, at the same size and time:
	// torn or foreign. Such a read is tried again until two agree.
	for i := 0; err == nil && info.Mode().IsRegular() && info.Size() <= MaxSize; i++ {
		if kind, stamp = classify(data); kind != Torn && kind != Foreign || i == settleReads {
			break
		}
		again, more, aerr := readStable(f, info)
		if aerr == nil && bytes.Equal(more, data) {
			break
		}
		info, data, err = again, more, aerr
	}
	if errors.Is(err, fs.ErrPermission) {
		return Sighting{}, err
	}
	s.Size, s.Mtime = info.Size(), info.ModTime()
	switch {
	case errors.Is(err, errUnsettled):
		s.Kind = Torn
	case err != nil || !info.Mode().IsRegular() || info.Size() > MaxSize:
	default:
		s.Kind, s.Stamp, s.Content = kind, stamp, data
	}
	return s, nil
}

// settleReads bounds the reads readStable makes of a file that keeps
// changing under it.
const settleReads = 4

// errUnsettled says a file changed during every read readStable made of it.
var errUnsettled = errors.New("lock file changed while read")

// readStable reads a regular file of at most MaxSize bytes, whose stat
// before the read is info, in one read, and stats it again after: a read
// is kept only when the file's size and time did not change across it and
// it returned that size. Linux does not make a read atomic with a writer's
// truncate and write: a read that began before them can return the old
// bytes with the new size (a whole stamp and zeros), which is neither.
// A file that changes across every read is errUnsettled: someone is
// writing it now. It returns the stat the bytes agree with; a file that is
// not regular, or too large, is not read (nil bytes, no error).
func readStable(f lockfs.File, info fs.FileInfo) (fs.FileInfo, []byte, error) {
	for range settleReads {
		if !info.Mode().IsRegular() || info.Size() > MaxSize {
			return info, nil, nil
		}
		var data []byte
		if info.Size() > 0 {
			var err error
			if data, err = readOnce(f, info.Size()); err != nil {
				return info, nil, err
			}
		}
		after, err := f.Stat()
		if err != nil {
			return info, nil, err
		}
		if int64(len(data)) == info.Size() && after.Size() == info.Size() && after.ModTime().Equal(info.ModTime()) {
			return info, data, nil
		}
		info = after
	}
	return info, nil, errUnsettled
}

// readOnce reads up to n bytes from the start of a file in one read (two
// when the file is shorter: the second sees its end), so that a writer
// that replaces its bytes (truncating, then writing the new ones, as
// proclock's writers do) is not seen as two reads that join the start of
// one stamp to the end of another. Callers that must see a file grow ask
// for more than its size, or stat it again (readStable).
func readOnce(f lockfs.File, n int64) ([]byte, error) {
	data := make([]byte, min(n, MaxSize+1))
	got, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data[:got], nil
}

// lstatSighting describes a path that could not be opened and read.
func lstatSighting(fsys lockfs.FS, path string) (Sighting, error) {
	info, err := fsys.Lstat(path)
	if err != nil {
		return Sighting{}, err
	}
	if info.IsDir() {
		return Sighting{}, &fs.PathError{Op: "open", Path: path, Err: lockfs.ErrIsDir}
	}
	id, _ := fsys.FileID(path)
	return Sighting{Kind: Foreign, ID: id, Size: info.Size(), Mtime: info.ModTime()}, nil
}

// ReadOpen classifies an open file's bytes, for a file a lock keeps open:
// its size first, so that the common case, an empty SQLite lock, costs one
// stat.
func ReadOpen(f lockfs.File) (Kind, []byte, error) {
	info, err := f.Stat()
	if err != nil {
		return Foreign, nil, err
	}
	if info.Size() == 0 && info.Mode().IsRegular() {
		return Empty, nil, nil
	}
	info, data, err := readStable(f, info)
	switch {
	case errors.Is(err, errUnsettled):
		return Torn, nil, nil
	case err != nil:
		return Foreign, nil, err
	case !info.Mode().IsRegular() || info.Size() > MaxSize:
		return Foreign, nil, nil
	}
	return Classify(data), data, nil
}
