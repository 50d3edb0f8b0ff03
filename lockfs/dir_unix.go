//go:build unix

package lockfs

import (
	"io/fs"
	"path/filepath"
	"sync"

	"golang.org/x/sys/unix"
)

// OpenDir opens dir for the *at system calls (DirOpener): on linux with
// O_PATH, which reads nothing and needs no permission to read dir.
func (osFS) OpenDir(dir string) (Dir, error) {
	if err := CheckPath("open", dir); err != nil {
		return nil, err
	}
	for {
		fd, err := unix.Open(dir, dirOpenFlags|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
		if err == nil {
			return &osDir{fd: fd, name: dir}, nil
		}
		if err != unix.EINTR {
			return nil, &fs.PathError{Op: "open", Path: dir, Err: err}
		}
	}
}

// osDir is a directory kept open by its descriptor.
type osDir struct {
	name string
	mu   sync.RWMutex // fd is not closed while a call uses it
	fd   int          // -1 once closed
}

// use runs fn on the directory's descriptor, or fails as a closed file.
func (d *osDir) use(op, base string, fn func(fd int) error) error {
	d.mu.RLock()
	defer d.mu.RUnlock()
	if d.fd < 0 {
		return &fs.PathError{Op: op, Path: filepath.Join(d.name, base), Err: fs.ErrClosed}
	}
	for {
		err := fn(d.fd)
		if err == nil {
			return nil
		}
		if err != unix.EINTR {
			return &fs.PathError{Op: op, Path: filepath.Join(d.name, base), Err: err}
		}
	}
}

func (d *osDir) FileID(base string) (FileID, error) {
	if err := CheckPath("fileid", base); err != nil {
		return FileID{}, err
	}
	var id FileID
	err := d.use("fileid", base, func(fd int) (err error) {
		id, err = fileIDAt(fd, base)
		return err
	})
	return id, err
}

// Remove unlinks base, or removes it as an empty directory, as os.Remove
// does.
func (d *osDir) Remove(base string) error {
	if err := CheckPath("remove", base); err != nil {
		return err
	}
	return d.use("remove", base, func(fd int) error {
		err := unix.Unlinkat(fd, base, 0)
		if err == unix.EISDIR || err == unix.EPERM {
			if rerr := unix.Unlinkat(fd, base, unix.AT_REMOVEDIR); rerr == nil || rerr != unix.ENOTDIR {
				return rerr
			}
		}
		return err
	})
}

func (d *osDir) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.fd < 0 {
		return nil
	}
	err := unix.Close(d.fd)
	d.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: d.name, Err: err}
	}
	return nil
}
