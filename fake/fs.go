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

// actor is who performs an operation on the world's filesystem: a process,
// or the world itself (proc nil), which is root and ignores permissions.
// It is the lockfs.FS a process sees: each process has its own, so that
// proclock keys its in-process turns per process.
type actor struct {
	m    *memfs
	proc *Process
	pid  int // proc's, as hooks see it; 0 for the world
	// pending is the names the operation under way resolved, for its
	// end to record as seen (look.go); guarded by m.mu.
	pending []lookKey
}

var _ lockfs.FS = (*actor)(nil)

func (a *actor) dead() bool { return a.proc != nil && !a.proc.Alive() }

// may reports whether a has perm on n: every process owns every file.
func (a *actor) may(n *inode, perm fs.FileMode) bool {
	return a.proc == nil || n.mode&perm == perm
}

// mayChange reports whether a may add or remove names in dir.
func (a *actor) mayChange(dir *inode) bool { return a.may(dir, permW|permX) }

// step names one operation, as hooks see it and as its errors tell it.
type step struct {
	op      Op     // as hooks match it
	verb    string // the operation in errors: "open", "lstat", ...
	path    string // the path acted on, as given
	newPath string // rename, link: the new name, as given
	flag    int    // open: its flags, for hooks
	handle  bool   // on an open file, not a name
	sleep   *Sleep // a step that waits (Event.Sleep)
}

// fail wraps err as package os would for this operation. io.EOF and the
// lock table's answers to SQLite stay bare, and an error that already
// names its path stays as it is.
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
	case s.op == OpRename || s.op == OpRenameNoReplace || s.op == OpLink:
		return &os.LinkError{Op: s.verb, Old: s.path, New: s.newPath, Err: err}
	}
	return &fs.PathError{Op: s.verb, Path: s.path, Err: err}
}

// event is what hooks are told of the step: none for a file with no name
// (SQLite's temporary files), which nothing else can reach.
func (s step) event(pid int, when When) Event {
	ev := Event{Op: s.op, Call: s.verb, Flag: s.flag, Handle: s.handle, When: when, PID: pid, Sleep: s.sleep}
	if s.path != "" {
		ev.Path = clean(s.path)
	}
	if s.newPath != "" {
		ev.NewPath = clean(s.newPath)
	}
	return ev
}

// run performs one operation: a dead process is refused before anything
// happens; Before hooks run, and may refuse it; body runs under the tree's
// lock (unless the process died meanwhile); After hooks see its error, and
// may replace it.
func run[T any](a *actor, s step, body func() (T, error)) (T, error) {
	var zero T
	if a.dead() {
		return zero, s.fail(ErrKilled)
	}
	if err := s.check(); err != nil {
		return zero, err
	}
	ev := s.event(a.pid, Before)
	if err := a.m.hooks.fire(ev); err != nil {
		return zero, s.fail(err)
	}
	res, err := func() (T, error) {
		a.m.mu.Lock()
		defer a.m.mu.Unlock()
		if a.dead() {
			return zero, ErrKilled
		}
		defer a.seen()
		return body()
	}()
	err = s.fail(err)
	ev.When, ev.Err = After, err
	if herr := a.m.hooks.fire(ev); herr != nil {
		err = s.fail(herr)
	}
	return res, err
}

// check refuses an empty name, as every FS method does.
func (s step) check() error {
	if s.handle {
		return nil
	}
	err := fserr.CheckPath(s.verb, s.path)
	if err == nil && (s.op == OpRename || s.op == OpRenameNoReplace || s.op == OpLink) {
		err = fserr.CheckPath(s.verb, s.newPath)
	}
	return err
}

// exec runs an operation that returns only an error.
func exec(a *actor, s step, body func() error) error {
	_, err := run(a, s, func() (struct{}, error) { return struct{}{}, body() })
	return err
}

func (a *actor) OpenFile(name string, flag int, perm os.FileMode) (lockfs.File, error) {
	return a.opened(run(a, step{op: OpOpen, verb: "open", path: name, flag: flag}, func() (*file, error) {
		return a.m.openFile(a, name, flag, perm)
	}))
}

func (a *actor) OpenNoFollow(name string) (lockfs.File, error) {
	return a.opened(run(a, step{op: OpOpen, verb: "open", path: name}, func() (*file, error) {
		return a.m.openFile(a, name, noFollow, 0)
	}))
}

// opened turns an open's result into a lockfs.File. A file opened by an
// open that a hook then failed is closed, so it does not leak.
func (a *actor) opened(f *file, err error) (lockfs.File, error) {
	if err != nil {
		if f != nil {
			a.m.closeFile(f.description)
		}
		return nil, err
	}
	return f, nil
}

func (a *actor) Remove(name string) error {
	return exec(a, step{op: OpRemove, verb: "remove", path: name}, func() error {
		return a.m.remove(a, name)
	})
}

func (a *actor) Rename(oldname, newname string) error {
	return exec(a, step{op: OpRename, verb: "rename", path: oldname, newPath: newname}, func() error {
		return a.m.rename(a, oldname, newname)
	})
}

// RenameNoReplace is renameat2 with RENAME_NOREPLACE
// (fsx.NoReplaceRenamer), which the fake's filesystem has.
// A hook's EINVAL, ENOSYS or EPERM stages a filesystem without it:
// the error then matches fserr.ErrNoReplaceUnsupported, as OS's does.
func (a *actor) RenameNoReplace(oldname, newname string) error {
	err := exec(a, step{op: OpRenameNoReplace, verb: "rename", path: oldname, newPath: newname}, func() error {
		return a.m.renameNoReplace(a, oldname, newname)
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
	return exec(a, step{op: OpLink, verb: "link", path: oldname, newPath: newname}, func() error {
		return a.m.link(a, oldname, newname)
	})
}

// stat is Stat, which the fake's SQLite uses (following symlinks).
func (a *actor) stat(name string) (os.FileInfo, error) {
	return run(a, step{op: OpStat, verb: "stat", path: name}, func() (os.FileInfo, error) {
		return a.m.stat(a, name, true)
	})
}

func (a *actor) Lstat(name string) (os.FileInfo, error) {
	return run(a, step{op: OpStat, verb: "lstat", path: name}, func() (os.FileInfo, error) {
		return a.m.stat(a, name, false)
	})
}

func (a *actor) FileID(name string) (lockfs.FileID, error) { return a.id("fileid", name, false) }

// DirID identifies the directory dir names, following symlinks.
func (a *actor) DirID(dir string) (lockfs.FileID, error) { return a.id("dirid", dir, true) }

// id identifies the file at name, or, for DirID, the directory.
func (a *actor) id(verb, name string, dir bool) (lockfs.FileID, error) {
	return run(a, step{op: OpStat, verb: verb, path: name}, func() (lockfs.FileID, error) {
		w, err := a.m.existing(a, name, dir)
		if err == nil && dir && !w.node.isDir() {
			err = syscall.ENOTDIR
		}
		if err != nil {
			return lockfs.FileID{}, err
		}
		return idOf(w.node), nil
	})
}

// FileIDOf identifies a file opened through any actor of the same world;
// any other file fails with an error wrapping lockfs.ErrNoFileID.
func (a *actor) FileIDOf(f lockfs.File) (lockfs.FileID, error) {
	mf, ok := f.(*file)
	if !ok || mf == nil || mf.m != a.m {
		name := ""
		if f != nil {
			name = f.Name()
		}
		return lockfs.FileID{}, &fs.PathError{Op: "fileid", Path: name, Err: lockfs.ErrNoFileID}
	}
	return run(a, step{op: OpStat, verb: "fileid", path: mf.name, handle: true}, func() (lockfs.FileID, error) {
		if mf.closed {
			return lockfs.FileID{}, os.ErrClosed
		}
		return idOf(mf.node), nil
	})
}

func idOf(n *inode) lockfs.FileID {
	return lockfs.FileID{Dev: dev, Ino: n.ino, Birth: n.birth, HasBirth: true, Links: n.nlink}
}
