package fake

import (
	"io/fs"
	"os"
	"syscall"

	"github.com/proclock/proclock/fake/internal/sqlfile"
	"github.com/proclock/proclock/lockfs"
)

// The fake FS's byte-range locks (lockfs.RangeLocker) are its SQLite lock
// table, whatever the range: a write lock is the EXCLUSIVE level, and one
// seen is another's RESERVED or more. The SQLite mechanism asks only for
// SQLite's bytes, so the fake answers as the OS does for those. Each call
// is a "lock" operation on the file.
var _ lockfs.RangeLocker = (*actor)(nil)

func (a *actor) OpenLockable(name string) (lockfs.File, error) {
	return a.open(name, os.O_RDWR, noFollow|os.O_RDWR, 0)
}

func (a *actor) TryLockRange(lf lockfs.File, off, n int64) (got bool, err error) {
	f, err := a.own(lf, "lock", fs.ErrInvalid)
	if err != nil {
		return false, err
	}
	err = doErr(f, opLock, "lock", func() error {
		if !f.writable {
			return syscall.EBADF
		}
		if got = f.node.freeFor(f.description); got {
			f.setLevel(sqlfile.Exclusive)
		}
		return nil
	})
	return got, err
}

// LockRange waits in the inode's queue: each try is a step ("lockw")
// whose Event.Ready tells whether it would take the lock, and between
// tries it blocks, counted a sleeper, until a lock is let go.
func (a *actor) LockRange(lf lockfs.File, off, n int64) error {
	f, err := a.own(lf, "lockw", fs.ErrInvalid)
	if err != nil {
		return err
	}
	ready := func() bool {
		a.m.mu.Lock()
		defer a.m.mu.Unlock()
		return a.dead() || f.closed || f.node.freeFor(f.description)
	}
	for {
		var unlocked chan struct{}
		err := exec(a, step{op: opLock, verb: "lockw", path: f.name, handle: true, ready: ready}, func() error {
			switch {
			case f.closed:
				return os.ErrClosed
			case !f.writable:
				return syscall.EBADF
			case f.node.freeFor(f.description):
				f.setLevel(sqlfile.Exclusive)
				return nil
			case f.node.unlocked == nil:
				f.node.unlocked = make(chan struct{})
			}
			unlocked = f.node.unlocked
			return nil
		})
		if err != nil || unlocked == nil {
			return err
		}
		var died chan struct{} // the world's FS never dies
		if a.proc != nil {
			died = a.proc.died
		}
		s := newSleeper()
		a.m.clock.hold(s)
		select {
		case <-unlocked:
		case <-died:
		}
		a.m.clock.end(s)
		if closed(died) {
			return &fs.PathError{Op: "lockw", Path: f.name, Err: ErrKilled}
		}
	}
}

func (a *actor) RangeWriteLocked(lf lockfs.File, off, n int64) (locked bool, err error) {
	f, err := a.own(lf, "getlk", fs.ErrInvalid)
	if err != nil {
		return false, err
	}
	err = doErr(f, opLock, "getlk", func() error {
		for g, level := range f.node.locks {
			if g != f.description && level >= sqlfile.Reserved {
				locked = true
			}
		}
		return nil
	})
	return locked, err
}
