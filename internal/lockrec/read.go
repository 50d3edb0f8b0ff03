package lockrec

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"time"

	"github.com/proclock/proclock/lockfs"
)

// ErrNotLockFile is matched by the error for a file at a lock's path that
// is not recognisably a lock file (Kind Foreign): proclock never removes
// or changes it.
var ErrNotLockFile = errors.New("not a lock file")

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
// fs.ErrNotExist; a directory or a permission failure is an error.
func Read(fsys lockfs.FS, path string) (Sighting, error) {
	f, err := fsys.OpenNoFollow(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			return Sighting{}, err
		}
		// A symlink, a socket, or anything else that does not open.
		return lstatSighting(fsys, path)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return lstatSighting(fsys, path)
	}
	if info.IsDir() {
		return Sighting{}, &fs.PathError{Op: "open", Path: path, Err: lockfs.ErrIsDir}
	}
	s := Sighting{Kind: Foreign, Size: info.Size(), Mtime: info.ModTime()}
	s.ID, _ = fsys.FileIDOf(f) // without an identity, size, time and bytes still tell files apart
	if !info.Mode().IsRegular() || info.Size() > MaxSize {
		return s, nil
	}
	if info.Size() == 0 {
		s.Kind = Empty
		return s, nil
	}
	s.Content, err = readOnce(f, info.Size())
	switch {
	case errors.Is(err, fs.ErrPermission):
		return Sighting{}, err
	case err != nil || len(s.Content) > MaxSize:
		s.Content = nil
		return s, nil
	}
	s.Kind, s.Stamp = classify(s.Content)
	return s, nil
}

// readOnce reads a file of about size bytes in one read, so that a writer
// that replaces its bytes (truncating, then writing the new ones, as
// proclock's writers do) is seen before or after, never half way: two
// reads could join the start of one stamp to the end of another.
func readOnce(f lockfs.File, size int64) ([]byte, error) {
	data := make([]byte, min(size, MaxSize)+1)
	n, err := f.ReadAt(data, 0)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	return data[:n], nil
}

// lstatSighting describes a path that could not be opened and read.
func lstatSighting(fsys lockfs.FS, path string) (Sighting, error) {
	info, _, err := fsys.LstatIfPossible(path)
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
	switch {
	case err != nil:
		return Foreign, nil, err
	case !info.Mode().IsRegular() || info.Size() > MaxSize:
		return Foreign, nil, nil
	case info.Size() == 0:
		return Empty, nil, nil
	}
	data, err := readOnce(f, info.Size())
	switch {
	case err != nil:
		return Foreign, nil, err
	case len(data) > MaxSize:
		return Foreign, nil, nil
	}
	return Classify(data), data, nil
}
