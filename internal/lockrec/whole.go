package lockrec

import (
	"bytes"
	"crypto/rand"
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/proclock/proclock/internal/fserr"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// TempSuffix opens the suffix of a record's temporary file:
// "<name>.new-<pid>-<random>", where a writer writes a record whole before
// it links the file to its name (CreateWhole).
const TempSuffix = ".new"

// TempName is the path of a temporary file of the writer pid for the file
// at name, random its random part (docs/protocol.md, "Names").
func TempName(name string, pid int, random string) string {
	return Sidecar(name, fmt.Sprintf("%s-%d-%s", TempSuffix, pid, random))
}

// CreateWhole creates name holding data, exclusively, so that no one ever
// sees it at its name but whole: data is written into a temporary file of
// this writer (pid, TempName), which then takes name, by a rename that
// replaces nothing (fsx.NoReplaceRenamer) or, on a filesystem without
// one, by a link after which the temporary name is removed; both fail
// with fs.ErrExist when something is there, as O_EXCL does, and the
// temporary name is removed then. A writer killed on the way
// leaves, at most, its temporary file, which keeps no one out and is
// removed once it is seen dead (Sweep), or a whole record at name
// (docs/protocol.md, "Every record appears whole").
//
// On a filesystem without hard links (link(2) failing with EPERM or
// ENOTSUP: FAT, some FUSE and network filesystems, a wasm guest's), it
// falls back to creating name with O_EXCL and writing data into it: a
// writer killed in between leaves an empty or cut file, which readers
// judge by the 30 s rule. There, a failed write leaves the file at name,
// and placed is true: the caller gives it up as it must (it may be the
// lock file, which only its holder removes).
//
// It returns the file, open for reading and writing, at name. It fails
// with an error matching fs.ErrExist when name exists.
func CreateWhole(fsys lockfs.FS, name string, data []byte, pid int) (f lockfs.File, placed bool, err error) {
	temp := TempName(name, pid, rand.Text())
	f, err = fsys.OpenFile(temp, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	switch {
	case errors.Is(err, fs.ErrExist):
		// A random name taken: not name's existence. Said so, so that
		// no caller takes it for a held lock.
		return nil, false, fmt.Errorf("temporary file: %w", errors.Join(err, errTempTaken))
	case err != nil:
		// No temporary file here (a directory this user may not write,
		// a read-only filesystem): what creating name itself meets, an
		// existing file (fs.ErrExist, to judge) first.
		return createDirect(fsys, name, data)
	}
	if _, err = f.Write(data); err != nil {
		fsys.Remove(temp)
		f.Close()
		return nil, false, err
	}
	if rn, ok := fsys.(fsx.NoReplaceRenamer); ok {
		// The temporary file takes the name in one step, and its open
		// handle then shows the name (/proc/<pid>/fd, lsof).
		err = rn.RenameNoReplace(temp, name)
		switch {
		case err == nil:
			return f, true, nil
		case !errors.Is(err, fserr.ErrNoReplaceUnsupported):
			// Taken (fs.ErrExist), or failing as a link would.
			fsys.Remove(temp)
			f.Close()
			return nil, false, err
		}
		// Not on this filesystem: linked, as without the power.
	}
	err = fsys.Link(temp, name)
	// Linked or not, the temporary name goes; one left (the removal
	// failing, or this process killed first) is a second name of a whole
	// record, or a file never linked, and is swept once its writer is
	// gone.
	fsys.Remove(temp)
	switch {
	case err == nil:
		return f, true, nil
	case noLinks(err):
		f.Close()
		return createDirect(fsys, name, data)
	}
	f.Close()
	return nil, false, err
}

// errTempTaken says a temporary file's random name was taken.
var errTempTaken = errors.New("lockrec: a temporary file's random name is taken")

// noLinks reports whether err, from Link, says the filesystem has no hard
// links: EPERM (FAT, and linux's answer for a filesystem that cannot) or
// ENOTSUP, EOPNOTSUPP, ENOSYS (errors.ErrUnsupported).
func noLinks(err error) bool {
	var le *os.LinkError
	if !errors.As(err, &le) {
		return false
	}
	return errors.Is(err, errors.ErrUnsupported) || errors.Is(err, fs.ErrPermission)
}

// createDirect is CreateWhole without hard links: create, then write.
func createDirect(fsys lockfs.FS, name string, data []byte) (lockfs.File, bool, error) {
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return nil, false, err
	}
	if _, err := f.Write(data); err != nil {
		return f, true, err
	}
	return f, true, nil
}

// OnePage is the most a write rewrites in place in one piece: a write
// within one page at the file's start is never cut by a kill (linux checks
// for a fatal signal between pages only), so its writer leaves the old
// bytes or the new ones.
const OnePage = 4096

// Cover is data, the empty database or a record (Record.Marshal's
// bytes), made to cover size bytes, the size of the file it is to be
// written over in one write, so that the file never keeps the old bytes'
// tail, with no truncation before or after: the database followed by
// zeros short of a second page (which SQLite reads as the one page its
// header counts, and Classify as the database; over a longer file it is
// data as it is), a record padded with spaces before its
// newline. A record is never DatabaseSize bytes long (one more space
// then), as Marshal's never is.
func Cover(data []byte, size int64) []byte {
	if int64(len(data)) >= size || len(data) == 0 {
		return data
	}
	if bytes.Equal(data, emptyDatabase) {
		if size >= 2*DatabaseSize {
			return data // a second page would be a database's
		}
		out := make([]byte, size)
		copy(out, data)
		return out
	}
	out := make([]byte, size)
	if size == DatabaseSize {
		out = append(out, 0)
	}
	copy(out, data[:len(data)-1])
	for i := len(data) - 1; i < len(out)-1; i++ {
		out[i] = ' '
	}
	out[len(out)-1] = '\n'
	return out
}
