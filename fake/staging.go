package fake

import (
	"io/fs"
	"os"
	"slices"
	"syscall"

	"github.com/proclock/proclock/internal/fserr"
)

// The world's staging of what no lock does, and changes no process could
// make in one step: each made at once, as root, seen by no hook, failing
// as package os's functions do.

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

// Mknod creates a node with no data at name: a FIFO, socket or device
// (mode's type; EINVAL otherwise). A FIFO or device reads as empty and
// keeps nothing written; a socket cannot be opened (ENXIO).
func (w *World) Mknod(name string, mode fs.FileMode) error {
	return w.stage("mknod", name, func(m *memfs) error {
		switch mode.Type() {
		case fs.ModeNamedPipe, fs.ModeSocket, fs.ModeDevice, fs.ModeDevice | fs.ModeCharDevice:
			return m.make(name, mode.Type()|modeBits(mode), "")
		}
		return syscall.EINVAL
	})
}

// Chmod sets the permission bits of name, as os.Chmod: a mode of 0 stages
// EACCES for every process (each owns every file), not for the world.
func (w *World) Chmod(name string, mode fs.FileMode) error {
	return w.stage("chmod", name, func(m *memfs) error {
		at, err := m.existing(name, true)
		if err == nil {
			at.node.mode = at.node.mode.Type() | modeBits(mode)
		}
		return err
	})
}

// WriteFile writes data to name, as os.WriteFile.
func (w *World) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return w.stage("open", name, func(m *memfs) error {
		f, err := m.openFile(m.world, name, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
		if err == nil {
			_, err = f.writeAt(data, 0)
			m.release(f.description)
		}
		return err
	})
}

// ReadFile returns the bytes of name, as os.ReadFile.
func (w *World) ReadFile(name string) (data []byte, err error) {
	err = w.stage("read", name, func(m *memfs) error {
		at, err := m.existing(name, true)
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

// SwapInode replaces the regular file at name (not following a symlink)
// with a new inode holding the same bytes, mode and mtime, in one step:
// only its FileID tells it apart. Open handles keep the old one.
func (w *World) SwapInode(name string) error {
	return w.stage("swapinode", name, func(m *memfs) error {
		at, err := m.existing(name, false)
		switch {
		case err != nil:
			return err
		case !at.node.isRegular():
			return syscall.EINVAL
		}
		old, n := at.node, m.newInode(at.node.mode)
		n.data, n.mtime = slices.Clone(old.data), old.mtime
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
