package fake

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"syscall"

	"github.com/proclock/proclock/fake/internal/sqlfile"
	"github.com/proclock/proclock/internal/fserr"
	"github.com/proclock/proclock/lockfs"
)

// actor is who performs an operation: a process, or the world (proc nil),
// root. It is the lockfs.FS a process sees, its own, so that proclock's
// in-process turns are per process.
type actor struct {
	m    *memfs
	proc *Process
	pid  int // proc's, as hooks see it; 0 for the world
}

var _ lockfs.FS = (*actor)(nil)

func (a *actor) dead() bool { return a.proc != nil && !a.proc.Alive() }

func (a *actor) may(n *inode, perm fs.FileMode) bool {
	return a.proc == nil || n.mode&perm == perm
}

// step names one operation, as hooks see it and as its errors tell it.
type step struct {
	op      string      // as hooks match it
	verb    string      // the operation in errors: "open", "lstat", ...
	path    string      // the path acted on, as given
	newPath string      // rename, link: the new name, as given
	flag    int         // open: its flags, for hooks
	handle  bool        // on an open file, not a name
	ready   func() bool // a step that waits (Event.Ready)
}

// fail wraps err as package os would; io.EOF, the lock table's answers
// and an error naming its path stay as they are.
func (s step) fail(err error) error {
	var pe *fs.PathError
	var le *os.LinkError
	switch err.(type) {
	case nil, sqlfile.Answer:
		return err
	}
	switch {
	case err == io.EOF, errors.As(err, &pe), errors.As(err, &le):
		return err
	case s.op == opRename || s.op == opRenameNoReplace || s.op == opLink:
		return &os.LinkError{Op: s.verb, Old: s.path, New: s.newPath, Err: err}
	}
	return &fs.PathError{Op: s.verb, Path: s.path, Err: err}
}

// event is what hooks are told of the step; a file with no name (SQLite's
// temporary one) has none.
func (s step) event(pid int) Event {
	ev := Event{Op: s.op, Call: s.verb, Flag: s.flag, Handle: s.handle, PID: pid, Ready: s.ready}
	if s.path != "" {
		ev.Path = sqlfile.Clean(s.path)
	}
	if s.newPath != "" {
		ev.NewPath = sqlfile.Clean(s.newPath)
	}
	return ev
}

// run performs one operation: Before hooks may refuse it; body runs under
// the tree's lock, unless the process is dead; After hooks see its error.
func run[T any](a *actor, s step, body func() (T, error)) (T, error) {
	var zero T
	if a.dead() {
		return zero, s.fail(ErrKilled)
	}
	if err := s.check(); err != nil {
		return zero, err
	}
	ev := s.event(a.pid)
	if err := a.m.hooks.fire(ev, false); err != nil {
		return zero, s.fail(err)
	}
	res, err := func() (T, error) {
		a.m.mu.Lock()
		defer a.m.mu.Unlock()
		if a.dead() {
			return zero, ErrKilled
		}
		defer a.m.lookAll()
		return body()
	}()
	err = s.fail(err)
	ev.Err = err
	if herr := a.m.hooks.fire(ev, true); herr != nil {
		err = s.fail(herr)
	}
	return res, err
}

func (s step) check() error {
	if s.handle {
		return nil
	}
	err := fserr.CheckPath(s.verb, s.path)
	if err == nil && (s.op == opRename || s.op == opRenameNoReplace || s.op == opLink) {
		err = fserr.CheckPath(s.verb, s.newPath)
	}
	return err
}

func exec(a *actor, s step, body func() error) error {
	_, err := run(a, s, func() (struct{}, error) { return struct{}{}, body() })
	return err
}

func (a *actor) OpenFile(name string, flag int, perm os.FileMode) (lockfs.File, error) {
	return a.open(name, flag, flag, perm)
}

func (a *actor) OpenNoFollow(name string) (lockfs.File, error) { return a.open(name, 0, noFollow, 0) }

// open opens name with flag, hooks seeing hookFlag, and closes a file whose
// open an After hook failed, so that it does not leak.
func (a *actor) open(name string, hookFlag, flag int, perm fs.FileMode) (lockfs.File, error) {
	f, err := run(a, step{op: opOpen, verb: "open", path: name, flag: hookFlag}, func() (*file, error) {
		return a.m.openFile(a, name, flag, perm)
	})
	if err != nil && f != nil {
		a.m.closeFile(f.description)
	}
	if err != nil {
		return nil, err
	}
	return f, nil
}

func (a *actor) Remove(name string) error {
	return exec(a, step{op: opRemove, verb: "remove", path: name}, func() error { return a.m.remove(name) })
}

func (a *actor) Rename(oldname, newname string) error {
	s := step{op: opRename, verb: "rename", path: oldname, newPath: newname}
	return exec(a, s, func() error { return a.m.rename(oldname, newname) })
}

// RenameNoReplace is fsx.NoReplaceRenamer's: EEXIST when newname exists,
// checked first as linux does. A hook's EINVAL, ENOSYS or EPERM stages a
// filesystem without it (fserr.ErrNoReplaceUnsupported).
func (a *actor) RenameNoReplace(oldname, newname string) error {
	err := exec(a, step{op: opRenameNoReplace, verb: "rename", path: oldname, newPath: newname}, func() error {
		if _, err := a.m.freeName(newname); err != nil {
			return err
		}
		return a.m.rename(oldname, newname)
	})
	var le *os.LinkError
	if errors.As(err, &le) {
		switch le.Err {
		case syscall.EINVAL, syscall.ENOSYS, syscall.EPERM:
			le.Err = fserr.NoReplaceUnsupported(le.Err)
		}
	}
	return err
}

func (a *actor) Link(oldname, newname string) error {
	s := step{op: opLink, verb: "link", path: oldname, newPath: newname}
	return exec(a, s, func() error { return a.m.link(oldname, newname) })
}

func (a *actor) Lstat(name string) (os.FileInfo, error) { return a.stat("lstat", name, false) }

func (a *actor) stat(verb, name string, follow bool) (os.FileInfo, error) {
	return run(a, step{op: opStat, verb: verb, path: name}, func() (os.FileInfo, error) { return a.m.stat(name, follow) })
}

func (a *actor) FileID(name string) (lockfs.FileID, error) { return a.id("fileid", name, false) }

func (a *actor) DirID(dir string) (lockfs.FileID, error) { return a.id("dirid", dir, true) }

func (a *actor) id(verb, name string, dir bool) (lockfs.FileID, error) {
	return run(a, step{op: opStat, verb: verb, path: name}, func() (lockfs.FileID, error) {
		w, err := a.m.existing(name, dir)
		if err == nil && dir && !w.node.isDir() {
			err = syscall.ENOTDIR
		}
		if err != nil {
			return lockfs.FileID{}, err
		}
		return idOf(w.node), nil
	})
}

// FileIDOf identifies a file of this world (else lockfs.ErrNoFileID).
func (a *actor) FileIDOf(f lockfs.File) (lockfs.FileID, error) {
	mf, err := a.own(f, "fileid", lockfs.ErrNoFileID)
	if err != nil {
		return lockfs.FileID{}, err
	}
	return run(a, step{op: opStat, verb: "fileid", path: mf.name, handle: true}, func() (lockfs.FileID, error) {
		if mf.closed {
			return lockfs.FileID{}, os.ErrClosed
		}
		return idOf(mf.node), nil
	})
}

func idOf(n *inode) lockfs.FileID {
	return lockfs.FileID{Dev: dev, Ino: n.ino, Birth: n.birth, HasBirth: true, Links: n.nlink}
}

// own is lf as a file of this world, else fails verb with err.
func (a *actor) own(lf lockfs.File, verb string, err error) (*file, error) {
	f, ok := lf.(*file)
	if !ok || f == nil || f.m != a.m {
		name := ""
		if lf != nil {
			name = lf.Name()
		}
		return nil, &fs.PathError{Op: verb, Path: name, Err: err}
	}
	return f, nil
}
