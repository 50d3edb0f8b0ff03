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

// TempSuffix opens the suffix of a record's temporary file,
// "<name>.new-<pid>-<random>" (CreateWhole).
const TempSuffix = ".new"

// CreateWhole creates name holding data, exclusively (else fs.ErrExist),
// open for reading and writing: written into a temporary file of the writer
// pid, which takes name by a rename that replaces nothing or a link
// (docs/protocol.md, "Every record appears whole"). Without hard links it
// creates name and writes it; placed says a failed write left it there.
func CreateWhole(fsys lockfs.FS, name string, data []byte, pid int) (f lockfs.File, placed bool, err error) {
	temp := Sidecar(name, fmt.Sprintf("%s-%d-%s", TempSuffix, pid, rand.Text()))
	f, err = fsys.OpenFile(temp, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	switch {
	case errors.Is(err, fs.ErrExist):
		// A random name taken, not name: never to be read as held.
		return nil, false, fmt.Errorf("temporary file: %w", errors.Join(err, errTempTaken))
	case err != nil:
		// No temporary file here (a read-only directory): what creating
		// name meets, fs.ErrExist first.
		return createDirect(fsys, name, data)
	}
	if _, err = f.Write(data); err != nil {
		fsys.Remove(temp)
		f.Close()
		return nil, false, err
	}
	if rn, ok := fsys.(fsx.NoReplaceRenamer); ok {
		// One step, and the open handle shows the name (lsof).
		err = rn.RenameNoReplace(temp, name)
		switch {
		case err == nil:
			return f, true, nil
		case !errors.Is(err, fserr.ErrNoReplaceUnsupported):
			fsys.Remove(temp)
			f.Close()
			return nil, false, err
		}
	}
	err = fsys.Link(temp, name)
	fsys.Remove(temp) // one left behind is swept once its writer is gone (Sweep)
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

var errTempTaken = errors.New("lockrec: a temporary file's random name is taken")

// noLinks reports whether err, from Link, says the filesystem has no hard
// links: EPERM (linux's answer), ENOTSUP, EOPNOTSUPP or ENOSYS.
func noLinks(err error) bool {
	_, ok := errors.AsType[*os.LinkError](err)
	return ok && (errors.Is(err, errors.ErrUnsupported) || errors.Is(err, fs.ErrPermission))
}

// createDirect is CreateWhole without hard links: create, then write.
func createDirect(fsys lockfs.FS, name string, data []byte) (lockfs.File, bool, error) {
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, FileMode)
	if err != nil {
		return nil, false, err
	}
	_, err = f.Write(data)
	return f, true, err
}

// OnePage is the most a write rewrites in place in one piece: linux checks
// for a fatal signal between pages only.
const OnePage = 4096

// Cover is data (the empty database, or Marshal's bytes) padded to cover
// size bytes in one write: the database with zeros short of a second page,
// a record with spaces before its newline (never DatabaseSize bytes).
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
	out := bytes.Repeat([]byte{' '}, int(size))
	if size == DatabaseSize {
		out = append(out, ' ')
	}
	copy(out, data[:len(data)-1])
	out[len(out)-1] = '\n'
	return out
}
