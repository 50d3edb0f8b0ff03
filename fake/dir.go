package fake

import (
	"path"
	"sync"
	"syscall"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

var _ fsx.DirOpener = (*actor)(nil)

// OpenDir keeps the directory dir names (following symlinks), to reach
// names in it whatever dir names later (fsx.DirOpener). Opening it
// changes nothing, so it is no step for hooks; the Dir's FileID and Remove
// are, as those of the FS, on the path dir joined with the base name.
func (a *actor) OpenDir(dir string) (fsx.Dir, error) {
	s := step{op: opStat, verb: "open", path: dir}
	if err := s.check(); err != nil {
		return nil, err
	}
	a.m.mu.Lock()
	defer a.m.mu.Unlock()
	if a.dead() {
		return nil, s.fail(ErrKilled)
	}
	w, err := a.m.existing(a, dir, true)
	if err == nil && !w.node.isDir() {
		err = syscall.ENOTDIR
	}
	if err != nil {
		return nil, s.fail(err)
	}
	return &dirHandle{a: a, node: w.node, name: dir}, nil
}

// dirHandle is a directory kept by an actor.
type dirHandle struct {
	a    *actor
	node *inode
	name string // as given to OpenDir

	mu     sync.Mutex
	closed bool
}

// at is where base is in the kept directory.
func (d *dirHandle) at(base string) (where, error) {
	d.mu.Lock()
	closed := d.closed
	d.mu.Unlock()
	switch {
	case closed:
		return where{}, syscall.EBADF
	case !d.a.may(d.node, permX):
		return where{}, syscall.EACCES
	}
	return where{dir: d.node, base: base, node: d.node.entries[base]}, nil
}

func (d *dirHandle) FileID(base string) (lockfs.FileID, error) {
	return run(d.a, step{op: opStat, verb: "fileid", path: path.Join(d.name, base)}, func() (lockfs.FileID, error) {
		w, err := d.at(base)
		if err == nil && w.node == nil {
			err = syscall.ENOENT
		}
		if err != nil {
			return lockfs.FileID{}, err
		}
		return idOf(w.node), nil
	})
}

func (d *dirHandle) Remove(base string) error {
	return exec(d.a, step{op: opRemove, verb: "remove", path: path.Join(d.name, base)}, func() error {
		w, err := d.at(base)
		switch {
		case err != nil:
			return err
		case w.node == nil:
			return syscall.ENOENT
		}
		return d.a.m.removeAt(d.a, w)
	})
}

func (d *dirHandle) Close() error {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.closed = true
	return nil
}
