package fake

import (
	"io/fs"
	"syscall"
	"time"

	"github.com/proclock/proclock/lockfs"
)

// The world's staging of the filesystem: changes no process could make as
// one step, made at once under the tree's lock and seen by no hook.

// SwapInode replaces the regular file at name (not following a symlink)
// with a new inode holding the same bytes, mode and times, in one step:
// only its identity (inode number, birth time) tells it apart. The old
// inode loses that name; open handles keep it.
func (w *World) SwapInode(name string) error {
	return w.stage("swapinode", name, func(m *memfs) error {
		at, err := m.regularAt(name)
		if err != nil {
			return err
		}
		m.replaceAt(at, m.copyOf(at.node))
		return nil
	})
}

// ReuseInode replaces the regular file at name with a new file that has the
// same device and inode number, bytes, mode and modification time, but a
// later birth time, as when a file is removed and the system hands its
// inode number to the next one created there. Only the birth time tells
// them apart. The file must have no other name (EMLINK otherwise), since an
// inode number is reused only once its file is gone.
func (w *World) ReuseInode(name string) error {
	return w.stage("reuseinode", name, func(m *memfs) error {
		at, err := m.regularAt(name)
		if err != nil {
			return err
		}
		if at.node.nlink > 1 {
			return syscall.EMLINK
		}
		n := m.copyOf(at.node)
		n.ino = at.node.ino
		n.birth = later(at.node.birth, n.birth)
		m.replaceAt(at, n)
		return nil
	})
}

// later returns now, or a microsecond after old when the clock has not
// moved past it.
func later(old, now time.Time) time.Time {
	if now.After(old) {
		return now
	}
	return old.Add(time.Microsecond)
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
		return m.mknod(actor{root: true}, name, mode)
	})
}

func (w *World) stage(verb, name string, body func(m *memfs) error) error {
	if err := lockfs.CheckPath(verb, name); err != nil {
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
