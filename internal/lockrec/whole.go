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

// CreateWhole creates name holding data, exclusively, and open for reading
// and writing, so that no one sees it at name but whole: data is written
// into a temporary file of the writer pid, which then takes name by a
// rename that replaces nothing, or by a link (docs/protocol.md, "Every
// record appears whole"). It fails with fs.ErrExist when name exists.
//
// Without hard links (EPERM, ENOTSUP: FAT, some FUSE, a wasm guest) it
// creates name with O_EXCL and writes it; a failed write then leaves the
// file at name, and placed is true, for the caller to give up.
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

// OnePage is the most a write rewrites in place in one piece: a kill never
// cuts a write within one page (linux checks for a fatal signal between
// pages only).
const OnePage = 4096

// Cover is data (the empty database, or Marshal's bytes) made to cover size
// bytes, to be written over a file of that size in one write, no tail of
// the old bytes left: the database followed by zeros short of a second
// page (data as it is over a longer file), a record padded with spaces
// before its newline, never DatabaseSize bytes long.
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
