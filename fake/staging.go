package fake

import (
	"io/fs"
	"os"
	"slices"
	"syscall"
	"time"

	"github.com/proclock/proclock/internal/fserr"
)

// The world's staging of the filesystem: what no lock does (directories,
// symlinks, modes, times, whole files) and changes no process could make
// as one step, made at once under the tree's lock, with root's powers, and
// seen by no hook. Their errors are *fs.PathError (*os.LinkError for
// Symlink) as package os's.

// Mkdir creates the directory name with perm, as os.Mkdir.
func (w *World) Mkdir(name string, perm fs.FileMode) error {
	return w.stage("mkdir", name, func(m *memfs) error { return m.make(name, fs.ModeDir|modeBits(perm), "") })
}

// Symlink creates newname as a symlink to oldname, as os.Symlink.
func (w *World) Symlink(oldname, newname string) error {
	err := w.stage("symlink", newname, func(m *memfs) error {
		if oldname == "" {
			return syscall.ENOENT
		}
		return m.make(newname, fs.ModeSymlink|0o777, oldname)
	})
	if pe, ok := err.(*fs.PathError); ok {
		return &os.LinkError{Op: "symlink", Old: oldname, New: newname, Err: pe.Err}
	}
	return err
}

// Mkfifo creates a FIFO at name. Opening it never blocks; reading it gives
// io.EOF at once (no writer ever writes) and writing it discards the bytes.
func (w *World) Mkfifo(name string) error {
	return w.Mknod(name, fs.ModeNamedPipe|0o644)
}

// Mknod creates a node that holds no data at name: mode's type is
// fs.ModeNamedPipe, fs.ModeSocket, fs.ModeDevice or fs.ModeDevice |
// fs.ModeCharDevice (EINVAL otherwise). A device reads as a FIFO does; a
// socket cannot be opened (ENXIO).
func (w *World) Mknod(name string, mode fs.FileMode) error {
	return w.stage("mknod", name, func(m *memfs) error {
		switch mode.Type() {
		case fs.ModeNamedPipe, fs.ModeSocket, fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
			return m.make(name, mode.Type()|modeBits(mode), "")
		}
		return syscall.EINVAL
	})
}

// Chmod sets the permission bits of name (following symlinks), as
// os.Chmod. Every process owns every file, so a mode of 0 stages EACCES
// for them all; the world itself is root and is not refused.
func (w *World) Chmod(name string, mode fs.FileMode) error {
	return w.stage("chmod", name, func(m *memfs) error {
		at, err := m.existing(m.world, name, true)
		if err == nil {
			at.node.mode = at.node.mode.Type() | modeBits(mode)
		}
		return err
	})
}

// Chtimes sets the modification time of name (following symlinks), as
// os.Chtimes does; a zero mtime leaves it unchanged. The world keeps no
// access times, which nothing reads.
func (w *World) Chtimes(name string, atime, mtime time.Time) error {
	return w.stage("chtimes", name, func(m *memfs) error {
		at, err := m.existing(m.world, name, true)
		if err == nil && !mtime.IsZero() {
			at.node.mtime = mtime
		}
		return err
	})
}

// WriteFile writes data to name, creating it with perm or truncating it,
// as os.WriteFile.
func (w *World) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return w.stage("open", name, func(m *memfs) error {
		f, err := m.openFile(m.world, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
		if err != nil {
			return err
		}
		defer m.release(f.description)
		_, err = f.writeAt(data, 0)
		return err
	})
}

// ReadFile returns the bytes of name, following symlinks, as os.ReadFile.
func (w *World) ReadFile(name string) (data []byte, err error) {
	err = w.stage("read", name, func(m *memfs) error {
		at, err := m.existing(m.world, name, true)
		switch {
		case err != nil:
			return err
		case at.node.isDir():
			return syscall.EISDIR
		}
		data = slices.Clone(at.node.data)
		return nil
	})
	return data, err
}

// Stat describes name, following symlinks, as os.Stat.
func (w *World) Stat(name string) (fi fs.FileInfo, err error) {
	err = w.stage("stat", name, func(m *memfs) (err error) {
		fi, err = m.stat(m.world, name, true)
		return err
	})
	return fi, err
}

// SwapInode replaces the regular file at name (not following a symlink)
// with a new inode holding the same bytes, mode and modification time, in
// one step: only its identity (inode number, birth time) tells it apart.
// The old inode loses that name; open handles keep it.
func (w *World) SwapInode(name string) error { return w.replace("swapinode", name, false) }

// ReuseInode replaces the regular file at name as SwapInode does, but the
// new file has the same inode number and a later birth time, as when a
// file is removed and the system hands its inode number to the next one
// created there: only the birth time tells them apart. The file must have
// no other name (EMLINK otherwise), since an inode number is reused only
// once its file is gone.
func (w *World) ReuseInode(name string) error { return w.replace("reuseinode", name, true) }

func (w *World) replace(verb, name string, reuse bool) error {
	return w.stage(verb, name, func(m *memfs) error {
		at, err := m.existing(m.world, name, false)
		switch {
		case err != nil:
			return err
		case !at.node.isRegular():
			return syscall.EINVAL
		case reuse && at.node.nlink > 1:
			return syscall.EMLINK
		}
		old, n := at.node, m.newInode(at.node.mode)
		n.data, n.mtime = slices.Clone(old.data), old.mtime
		if reuse {
			m.renumber(n, old.ino)
			if !n.birth.After(old.birth) {
				n.birth = old.birth.Add(time.Microsecond)
			}
		}
		m.dropName(at.dir, at.base)
		m.addName(at.dir, at.base, n)
		m.forgetIfGone(old)
		return nil
	})
}

func (w *World) stage(verb, name string, body func(m *memfs) error) error {
	if err := fserr.CheckPath(verb, name); err != nil {
		return err
	}
	m := w.u.fs
	m.mu.Lock()
	err := body(m)
	m.mu.Unlock()
	if err != nil {
		return &fs.PathError{Op: verb, Path: name, Err: err}
	}
	return nil
}
