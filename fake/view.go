package fake

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/proclock/proclock/lockfs"
)

// doer is who performs an operation on the world's filesystem: a process,
// or the world itself when proc is nil.
type doer struct {
	m    *memfs
	proc *Process
}

func (d doer) pid() int {
	if d.proc == nil {
		return 0
	}
	return d.proc.pid
}

func (d doer) actor() actor { return actor{pid: d.pid(), root: d.proc == nil} }

func (d doer) dead() bool { return d.proc != nil && !d.proc.Alive() }

// step names one operation, as hooks see it and as its errors tell it.
type step struct {
	op      Op     // "" for an operation no hook sees (Seek)
	verb    string // the operation in errors: "open", "lstat", ...
	path    string // the path acted on, as given
	newPath string // rename, link: the new name, as given
	target  string // symlink: the link's target, for its error
	flag    int    // open: its flags, for hooks
	handle  bool   // on an open file, not a name
}

// fail wraps err as package os would for this operation. io.EOF stays
// bare, and an error that already names its path stays as it is.
func (s step) fail(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch {
	case err == nil || err == io.EOF:
		return err
	case errors.As(err, &pe) || errors.As(err, &le):
		return err
	}
	switch s.op {
	case OpRename, OpLink:
		return &os.LinkError{Op: s.verb, Old: s.path, New: s.newPath, Err: err}
	case OpSymlink:
		return &os.LinkError{Op: s.verb, Old: s.target, New: s.path, Err: err}
	}
	return &fs.PathError{Op: s.verb, Path: s.path, Err: err}
}

func (s step) checkPaths() error {
	if err := lockfs.CheckPath(s.verb, s.path); err != nil {
		return err
	}
	if s.op == OpRename || s.op == OpLink {
		return lockfs.CheckPath(s.verb, s.newPath)
	}
	return nil
}

func (s step) event(pid int, when When) Event {
	ev := Event{Op: s.op, Call: s.verb, Path: clean(s.path), Flag: s.flag, Handle: s.handle, When: when, PID: pid}
	if s.newPath != "" {
		ev.NewPath = clean(s.newPath)
	}
	return ev
}

// run performs one operation: a dead process is refused before anything
// happens; Before hooks run, and may refuse it; body runs under the tree's
// lock; After hooks see its error, and may replace it.
func run[T any](d doer, s step, body func(actor) (T, error)) (T, error) {
	var zero T
	if d.dead() {
		return zero, s.fail(ErrKilled)
	}
	if err := s.checkPaths(); err != nil {
		return zero, err
	}
	if err := d.m.hooks.fire(s.event(d.pid(), Before)); err != nil {
		return zero, s.fail(err)
	}
	res, err := locked(d, body)
	err = s.fail(err)
	ev := s.event(d.pid(), After)
	ev.Err = err
	if herr := d.m.hooks.fire(ev); herr != nil {
		err = s.fail(herr)
	}
	return res, err
}

// locked runs body under the tree's lock, unless the process died while
// waiting for it (or in a Before hook).
func locked[T any](d doer, body func(actor) (T, error)) (T, error) {
	d.m.mu.Lock()
	defer d.m.mu.Unlock()
	if d.dead() {
		var zero T
		return zero, ErrKilled
	}
	return body(d.actor())
}

// view is a lockfs.FS on the world's filesystem, as one process (or the
// world itself) sees it. Each process has its own, so that proclock keys
// its in-process turns per process.
type view struct {
	doer
}

var _ lockfs.FS = (*view)(nil)

// Name names the filesystem.
func (v *view) Name() string { return "fake" }

func (v *view) Create(name string) (lockfs.File, error) {
	return v.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
}

func (v *view) Open(name string) (lockfs.File, error) {
	return v.OpenFile(name, os.O_RDONLY, 0)
}

func (v *view) OpenFile(name string, flag int, perm os.FileMode) (lockfs.File, error) {
	return v.handle(run(v.doer, step{op: OpOpen, verb: "open", path: name, flag: flag}, func(a actor) (*file, error) {
		return v.m.openFile(a, v.proc, name, flag, perm)
	}))
}

func (v *view) OpenNoFollow(name string) (lockfs.File, error) {
	return v.handle(run(v.doer, step{op: OpOpen, verb: "open", path: name}, func(a actor) (*file, error) {
		return v.m.openNoFollow(a, v.proc, name)
	}))
}

// handle turns an open's result into a lockfs.File. A file opened by an
// open that a hook then failed is closed, so it does not leak.
func (v *view) handle(f *file, err error) (lockfs.File, error) {
	if err != nil {
		if f != nil {
			v.m.mu.Lock()
			v.m.release(f)
			v.m.mu.Unlock()
		}
		return nil, err
	}
	return f, nil
}

func (v *view) Mkdir(name string, perm os.FileMode) error {
	return v.exec(step{op: OpMkdir, verb: "mkdir", path: name}, func(a actor) error {
		return v.m.mkdir(a, name, perm)
	})
}

func (v *view) MkdirAll(name string, perm os.FileMode) error {
	return v.exec(step{op: OpMkdir, verb: "mkdir", path: name}, func(a actor) error {
		return v.m.mkdirAll(a, name, perm)
	})
}

func (v *view) Remove(name string) error {
	return v.exec(step{op: OpRemove, verb: "remove", path: name}, func(a actor) error {
		return v.m.remove(a, name)
	})
}

func (v *view) RemoveAll(name string) error {
	return v.exec(step{op: OpRemove, verb: "removeall", path: name}, func(a actor) error {
		return v.m.removeAll(a, name)
	})
}

func (v *view) Rename(oldname, newname string) error {
	return v.exec(step{op: OpRename, verb: "rename", path: oldname, newPath: newname}, func(a actor) error {
		return v.m.rename(a, oldname, newname)
	})
}

func (v *view) Link(oldname, newname string) error {
	return v.exec(step{op: OpLink, verb: "link", path: oldname, newPath: newname}, func(a actor) error {
		return v.m.link(a, oldname, newname)
	})
}

func (v *view) Stat(name string) (os.FileInfo, error) {
	return run(v.doer, step{op: OpStat, verb: "stat", path: name}, func(a actor) (os.FileInfo, error) {
		return v.m.stat(a, name, true)
	})
}

// LstatIfPossible is Lstat: the fake always can.
func (v *view) LstatIfPossible(name string) (os.FileInfo, bool, error) {
	fi, err := run(v.doer, step{op: OpStat, verb: "lstat", path: name}, func(a actor) (os.FileInfo, error) {
		return v.m.stat(a, name, false)
	})
	return fi, true, err
}

// SymlinkIfPossible creates newname as a symlink to oldname.
func (v *view) SymlinkIfPossible(oldname, newname string) error {
	return v.exec(step{op: OpSymlink, verb: "symlink", path: newname, target: oldname}, func(a actor) error {
		return v.m.symlink(a, oldname, newname)
	})
}

// ReadlinkIfPossible returns the target of the symlink at name.
func (v *view) ReadlinkIfPossible(name string) (string, error) {
	return run(v.doer, step{op: OpReadlink, verb: "readlink", path: name}, func(a actor) (string, error) {
		return v.m.readlink(a, name)
	})
}

func (v *view) Chmod(name string, mode os.FileMode) error {
	return v.exec(step{op: OpChmod, verb: "chmod", path: name}, func(a actor) error {
		return v.m.chmod(a, name, mode)
	})
}

// Chown checks that name exists and changes nothing: the fake world has
// one user.
func (v *view) Chown(name string, uid, gid int) error {
	return v.exec(step{op: OpChown, verb: "chown", path: name}, func(a actor) error {
		_, err := v.m.existing(a, name, true)
		return err
	})
}

// Chtimes sets the times of name; a zero time leaves that one unchanged.
func (v *view) Chtimes(name string, atime, mtime time.Time) error {
	return v.exec(step{op: OpChtimes, verb: "chtimes", path: name}, func(a actor) error {
		return v.m.chtimes(a, name, atime, mtime)
	})
}

func (v *view) FileID(name string) (lockfs.FileID, error) {
	return run(v.doer, step{op: OpStat, verb: "fileid", path: name}, func(a actor) (lockfs.FileID, error) {
		n, err := v.m.existing(a, name, false)
		if err != nil {
			return lockfs.FileID{}, err
		}
		return idOf(n), nil
	})
}

// FileIDOf identifies a file opened through any view of the same world;
// any other file fails with an error wrapping lockfs.ErrNoFileID.
func (v *view) FileIDOf(f lockfs.File) (lockfs.FileID, error) {
	mf, ok := f.(*file)
	if !ok || mf == nil || mf.m != v.m {
		name := ""
		if f != nil {
			name = f.Name()
		}
		return lockfs.FileID{}, &fs.PathError{Op: "fileid", Path: name, Err: lockfs.ErrNoFileID}
	}
	return run(v.doer, step{op: OpStat, verb: "fileid", path: mf.name, handle: true}, func(actor) (lockfs.FileID, error) {
		if mf.closed {
			return lockfs.FileID{}, os.ErrClosed
		}
		return idOf(mf.node), nil
	})
}

func idOf(n *inode) lockfs.FileID {
	return lockfs.FileID{Dev: Dev, Ino: n.ino, Birth: n.birth, HasBirth: true}
}

func (v *view) ResolveDir(dir string) (string, error) {
	return run(v.doer, step{op: OpStat, verb: "resolvedir", path: dir}, func(a actor) (string, error) {
		return v.m.resolveDir(a, dir)
	})
}

// DirID identifies the directory dir names, following symlinks.
func (v *view) DirID(dir string) (lockfs.FileID, error) {
	return run(v.doer, step{op: OpStat, verb: "dirid", path: dir}, func(a actor) (lockfs.FileID, error) {
		w, err := v.m.dirAt(a, dir)
		if err != nil {
			return lockfs.FileID{}, err
		}
		return idOf(w.node), nil
	})
}

// exec runs an operation that returns only an error.
func (v *view) exec(s step, body func(actor) error) error {
	_, err := run(v.doer, s, func(a actor) (struct{}, error) {
		return struct{}{}, body(a)
	})
	return err
}
