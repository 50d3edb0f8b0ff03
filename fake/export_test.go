package fake

import (
	"io/fs"

	"github.com/proclock/proclock/lockfs"
)

// Sleepers returns how many sleeps are blocked on the frozen clock now.
func (w *World) Sleepers() int {
	c := w.u.fs.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}

// FS returns the process's view of the world's filesystem, the one its
// Platform holds.
func (p *Process) FS() lockfs.FS { return p.fs }

// OpenFiles returns how many files the process has open.
func (p *Process) OpenFiles() int {
	p.u.fs.mu.Lock()
	defer p.u.fs.mu.Unlock()
	n := 0
	for d := range p.u.fs.open {
		if d.by.proc == p {
			n++
		}
	}
	return n
}

// Stat describes name, following symlinks, as os.Stat.
func (w *World) Stat(name string) (fi fs.FileInfo, err error) {
	err = w.stage("stat", name, func(m *memfs) (err error) {
		fi, err = m.stat(name, true)
		return err
	})
	return fi, err
}
