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
// is no lock file (Foreign): never removed or changed.
var ErrNotLockFile = errors.New("not a lock file")

// ErrReadOnly is matched by the error of an attempt on a lock not held
// whose file this user may read but not write (docs/security.md).
var ErrReadOnly = fmt.Errorf("lock file readable but not writable by this user: %w", fs.ErrPermission)

// Sighting is what was read of a file: to judge it, and to tell later
// whether the path still names it unchanged.
type Sighting struct {
	Kind    Kind
	Stamp   *Record // when Kind is Stamp
	Content []byte
	ID      lockfs.FileID
	Size    int64
	Mtime   time.Time
}

// Same reports whether a and b saw the same file, unchanged.
func (a Sighting) Same(b Sighting) bool {
	return a.ID.Same(b.ID) && a.Size == b.Size && a.Mtime.Equal(b.Mtime) && bytes.Equal(a.Content, b.Content)
}

// Read reads and classifies the file at path, never following a symlink
// nor blocking. A missing file, a directory, EACCES and running out of
// descriptors are errors; what else cannot be read is Foreign.
func Read(fsys lockfs.FS, path string) (Sighting, error) {
	f, err := fsx.OpenLook(fsys, path)
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) || fsx.Exhausted(err) {
		return Sighting{}, err
	}
	if err != nil {
		return lstatSighting(fsys, path) // a symlink, a socket: anything that does not open
	}
	defer f.Close()
	info, id, err := fsx.StatID(fsys, f)
	if err != nil {
		return lstatSighting(fsys, path)
	}
	return sight(f, info, id)
}

// Sight is Read of f, open for reading: for a caller that is to write the
// very file it judges (docs/protocol.md, "The lock file is judged through
// the handle that writes it").
func Sight(fsys lockfs.FS, f lockfs.File) (Sighting, error) {
	info, id, err := fsx.StatID(fsys, f)
	if err != nil {
		return Sighting{}, err
	}
	return sight(f, info, id)
}

// sight is Sight of f, whose stat before the read is info, identity id.
func sight(f lockfs.File, info fs.FileInfo, id lockfs.FileID) (Sighting, error) {
	if info.IsDir() {
		return Sighting{}, &fs.PathError{Op: "open", Path: f.Name(), Err: lockfs.ErrIsDir}
	}
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
	s := Sighting{Kind: Foreign, ID: id, Size: info.Size(), Mtime: info.ModTime()}
	switch {
	case errors.Is(err, errUnsettled):
		s.Kind = Torn
	case err != nil || !info.Mode().IsRegular() || info.Size() > MaxSize:
	default:
		s.Kind, s.Stamp, s.Content = kind, stamp, data
	}
	return s, nil
}

// settleReads bounds the reads of a file that keeps changing.
const settleReads = 4

var errUnsettled = errors.New("lock file changed while read")

// readStable reads a regular file of at most MaxSize bytes, whose stat is
// info, keeping a read whose size a stat after it agrees with: linux's read
// can return the old bytes at a truncate-and-write's new size. A file
// changing across every read is errUnsettled. It returns the stat the bytes
// agree with.
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

// readOnce reads up to n bytes from a file's start in one read, so that no
// two reads join the start of one record to the end of another.
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

// ReadOpen classifies an open file's bytes, its size first: an empty
// SQLite lock costs one stat.
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
