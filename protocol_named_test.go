package proclock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"syscall"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
	"github.com/proclock/proclock/internal/explore"
	"github.com/proclock/proclock/internal/lockrec"
)

// The hard cases of docs/protocol.md, each staged as one schedule of the
// exploration's users (explore.Script): who goes how far, in which order.
// At every step the script takes, two users holding at once fail the test,
// as in the exploration; so does a fresh process of either mechanism that
// cannot take the lock once everyone is done.

const caseMark = exploreLock + lockrec.MarkSuffix

// caseUser is a user of a scripted case and what its Acquire returned.
type caseUser struct {
	*explore.User
	ro  role
	err error // Acquire's
}

// holder is the pid a held error names; 0 when none.
func (c *caseUser) holder() int {
	if h, ok := errors.AsType[*proclock.HeldError](c.err); ok && h.Holder != nil {
		return h.Holder.PID
	}
	return 0
}

// heldBy fails unless c's Acquire said the lock was held by pid.
func (c *caseUser) heldBy(t *testing.T, other *caseUser) {
	t.Helper()
	if !errors.Is(c.err, proclock.ErrHeld) || c.holder() != other.Proc.PID() {
		t.Errorf("%s: Acquire = %v; want held by %s (pid %d)", c.Name, c.err, other.Name, other.Proc.PID())
	}
}

// scriptCase stages before the run (a world with the lock's files as
// stage leaves them), adds users in roles, and runs script over them.
func scriptCase(t *testing.T, stage func(w *fake.World) error, roles []role, script func(s *explore.Scripter, w *fake.World, us []*caseUser) error) []*caseUser {
	t.Helper()
	var us []*caseUser
	var world *fake.World
	var stats exploreStats
	err := explore.Script(explore.Config{
		MinSleep: 0,
		Setup: func(r *explore.Run) func() error {
			world = r.World
			if err := r.World.WriteFile(exploreOther, exploreOtherData, 0o644); err != nil {
				r.Fail(err)
			}
			if stage != nil {
				if err := stage(r.World); err != nil {
					r.Fail(fmt.Errorf("staging: %w", err))
				}
			}
			for _, ro := range roles {
				c := &caseUser{ro: ro}
				var held *proclock.Lock
				c.User = r.User(ro.name, func(u *explore.User) error {
					l := held
					if l == nil {
						l, c.err = proclock.Acquire(context.Background(), ro.platform(u), ro.path(), proclock.Options{RemoveOnRelease: ro.remove})
						if c.err != nil {
							u.Logf("acquire: %v", c.err)
							return nil
						}
					}
					u.Critical()
					return l.Release()
				})
				if ro.holding {
					l, err := proclock.Acquire(context.Background(), ro.platform(c.User), ro.path(), proclock.Options{RemoveOnRelease: ro.remove})
					if err != nil {
						r.Fail(fmt.Errorf("staging %s: %w", ro.name, err))
					}
					held = l
				}
				us = append(us, c)
			}
			return func() error { return afterRun(r.World, &stats) }
		},
	}, func(s *explore.Scripter) error { return script(s, world, us) })
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range us {
		t.Logf("%s (pid %d): Acquire: %v", c.Name, c.Proc.PID(), c.err)
	}
	return us
}

// Matchers of the steps the cases stop at.
var (
	// creatingMark: about to create the mark (a SQLite process that
	// holds the kernel's lock on the file at the path, and has checked
	// that the path still names it).
	creatingMark = func(st explore.Step) bool {
		return st.Call == "open" && st.Path == caseMark && st.Flag&os.O_CREATE != 0
	}
)

// inCritical matches the step a holder stops at in its critical section.
func inCritical(st explore.Step) bool { return st.Label == "leave its critical section" }

// lookingForMark matches a file process's n-th look at the mark from now.
func lookingForMark(n int) func(explore.Step) bool {
	return explore.At("open", caseMark, n)
}

// released stages a lock file that a SQLite process took and let go: an
// empty database at the path, no mark.
func released(w *fake.World) error {
	l, err := proclock.Acquire(context.Background(), w.Spawn().Platform(), exploreLock, proclock.Options{})
	if err != nil {
		return err
	}
	return l.Release()
}

// inspectHolder is who a fresh process of the file mechanism says holds
// the lock, by pid (0: none named), and by which mechanism.
func inspectHolder(t *testing.T, w *fake.World) (int, proclock.Mechanism) {
	t.Helper()
	pp := w.Spawn().Platform().WithoutSQLite()
	st, err := proclock.Inspect(context.Background(), pp, exploreLock)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != proclock.StateHeld || st.Holder == nil {
		t.Fatalf("inspect: %+v; want held, holder named", st)
	}
	return st.Holder.PID, st.Mechanism
}

// waitThenHold: the file process, at a look for the mark that it finds
// live, looks again (it waits for the mark to go); the SQLite process
// finishes; the file process then holds, and a fresh process names it.
func waitThenHold(t *testing.T, s *explore.Scripter, w *fake.World, file, sq *caseUser) error {
	if err := s.Reach(file.User, "its second look for the mark", lookingForMark(2)); err != nil {
		return err
	}
	if err := s.Finish(sq.User); err != nil {
		return err
	}
	if err := s.Reach(file.User, "holding", inCritical); err != nil {
		return err
	}
	if pid, mech := inspectHolder(t, w); pid != file.Proc.PID() || mech != proclock.MechanismFile {
		return fmt.Errorf("inspect names pid %d (%s); want the file holder, %d", pid, mech, file.Proc.PID())
	}
	return nil
}

// The SQLite holder writes its mark while a file process has stamped the
// file it locked, and each sees the other: the SQLite process, looking for
// a stamp after its mark, finds the file process's and backs off; the file
// process, looking for a mark after its stamp, finds the SQLite one, waits
// for it to go, and holds. The file process is one that cannot see the
// kernel's locks (a wasm guest): one that can is kept out by the SQLite
// process's lock before it stamps (TestCaseKernelLockKeepsFileOut).
//
// This could not be staged on the old code (75ae1bc): its file process
// never stamped the file a SQLite process had locked. It judged the empty
// database "unstamped", and once that was 30 s old renamed it aside and
// created a new lock file, which TestCaseConvertBetweenKernelLockAndMark
// shows giving two holders there.
func TestCaseMarkWhileStamped(t *testing.T) {
	us := scriptCase(t, released, []role{sqliteUser, guestFile}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		sq, file := us[0], us[1]
		if err := s.Reach(sq.User, "its mark", creatingMark); err != nil {
			return err
		}
		if err := s.Reach(file.User, "stamping the database", explore.At("writeat", exploreLock, 1)); err != nil {
			return err
		}
		if err := s.Step(file.User); err != nil { // the stamp is in the file SQLite locked
			return err
		}
		if err := s.Reach(file.User, "its look for a mark", lookingForMark(1)); err != nil {
			return err
		}
		// The SQLite process marks, finds the stamp, and is about to
		// take its mark back.
		if err := s.Reach(sq.User, "taking its mark back", explore.At("remove", caseMark, 1)); err != nil {
			return err
		}
		// The file process sees the live mark and waits.
		return waitThenHold(t, s, w, file, sq)
	})
	us[0].heldBy(t, us[1])
	if us[1].err != nil {
		t.Errorf("file process: %v; want it to hold", us[1].err)
	}
}

// A file process converts a SQLite lock's database in place (it was free:
// no mark) while a SQLite process is between its kernel lock and its mark.
// The file process looks for a mark before the SQLite process writes one,
// finds none and holds; the SQLite process, looking for a stamp after its
// mark, finds it, takes its mark back and reports the file process as the
// holder. The file process is one that cannot see the kernel's locks (a
// wasm guest), as in TestCaseMarkWhileStamped.
//
// On the old code (75ae1bc), with the database 30 s old, this failed ("sqlite
// holds the lock while file holds it"): the file process renamed the
// database aside and created a new lock file, and the SQLite process, which
// had locked the renamed file and checked the path before, wrote its
// .holder and held beside it.
func TestCaseConvertBetweenKernelLockAndMark(t *testing.T) {
	us := scriptCase(t, released, []role{sqliteUser, guestFile}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		sq, file := us[0], us[1]
		if err := s.Reach(sq.User, "its mark", creatingMark); err != nil {
			return err
		}
		if err := s.Reach(file.User, "holding", inCritical); err != nil {
			return err
		}
		if err := s.Finish(sq.User); err != nil {
			return err
		}
		data, err := w.ReadFile(exploreLock)
		if err != nil || lockrec.Classify(data) != lockrec.Stamp {
			return fmt.Errorf("the lock file while the file process holds: %q, %v; want its stamp", data, err)
		}
		if _, err := w.FS().Lstat(caseMark); err == nil {
			return errors.New("the SQLite process left its mark behind")
		}
		return nil
	})
	us[0].heldBy(t, us[1])
	if us[1].err != nil {
		t.Errorf("file process: %v; want it to hold", us[1].err)
	}
}

// A file process that can see the kernel's locks finds a free database
// that a SQLite process has locked but not yet marked (the schedule of
// TestCaseConvertBetweenKernelLockAndMark): it is held, holder unknown,
// and the file is not written; the SQLite process then holds, and a fresh
// file process names it. Where the SQLite
// process is a connection outside proclock, which writes no mark
// (python's sqlite3), or a holder through another name of the file, its
// lock is all there is to see (TestFileMechanismSeesPlainSQLiteLock,
// TestHardLinkExcludes).
//
// On the old code (5872cbd), the file process converted the database and
// settled with the mark, as the wasm guest does in
// TestCaseConvertBetweenKernelLockAndMark.
func TestCaseKernelLockKeepsFileOut(t *testing.T) {
	us := scriptCase(t, released, []role{sqliteUser, fileUser}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		sq, file := us[0], us[1]
		if err := s.Reach(sq.User, "its mark", creatingMark); err != nil {
			return err
		}
		before, err := w.ReadFile(exploreLock)
		if err != nil {
			return err
		}
		if err := s.Finish(file.User); err != nil {
			return err
		}
		if h, ok := errors.AsType[*proclock.HeldError](file.err); !ok || h.Holder != nil || h.Reason != lockrec.SQLiteLockReason {
			return fmt.Errorf("file process beside the kernel's lock: %v; want held, by %q", file.err, lockrec.SQLiteLockReason)
		}
		if after, err := w.ReadFile(exploreLock); err != nil || !bytes.Equal(after, before) {
			return fmt.Errorf("the lock file: %q, %v; want it unchanged", after, err)
		}
		if err := s.Reach(sq.User, "holding", inCritical); err != nil {
			return err
		}
		if pid, mech := inspectHolder(t, w); pid != sq.Proc.PID() || mech != proclock.MechanismSQLite {
			return fmt.Errorf("inspect names pid %d (%s); want the SQLite holder, %d", pid, mech, sq.Proc.PID())
		}
		return s.Finish(sq.User)
	})
	if us[0].err != nil {
		t.Errorf("SQLite process: %v; want it to hold", us[0].err)
	}
}

// RemoveOnRelease: a file process creates the path between the SQLite
// holder's removal of the path and of its mark. It finds the mark, live,
// waits for it to go, and then holds.
//
// This could not be staged on the old code (75ae1bc): its SQLite holder
// removed its .holder before the path, so the window did not exist (the
// script fails there finding the path still in place), and its file
// mechanism read no mark at all.
func TestCaseRemoveOnReleaseCreateBetweenRemovals(t *testing.T) {
	holder := role{name: "sqlite(remove) holder", remove: true, holding: true}
	us := scriptCase(t, nil, []role{holder, fileUser}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		sq, file := us[0], us[1]
		if err := s.Reach(sq.User, "removing its mark, the path removed", explore.At("remove", caseMark, 1)); err != nil {
			return err
		}
		if _, err := w.FS().Lstat(exploreLock); err == nil {
			return errors.New("the path is still there as the holder removes its mark")
		}
		return waitThenHold(t, s, w, file, sq)
	})
	if us[1].err != nil {
		t.Errorf("file process: %v; want it to hold", us[1].err)
	}
}

// A dead SQLite holder's mark is removed under the guard by the SQLite
// process that now holds the kernel's lock, while another SQLite process,
// finding the kernel's lock taken, backs off. Only the remover holds, and
// the mark, once it writes its own, names it.
//
// This could not be staged on the old code (75ae1bc): it had no guard for
// marks and never removed one; a new holder renamed its .holder over the
// old one.
//
// The backing-off process's held error names the dead holder (its mark is
// still there when it looks): a name, not a live holder.
func TestCaseDeadMarkRemovedWhileAnotherBacksOff(t *testing.T) {
	deadHolder := func(w *fake.World) error {
		p := w.Spawn()
		if _, err := proclock.Acquire(context.Background(), p.Platform(), exploreLock, proclock.Options{}); err != nil {
			return err
		}
		p.Kill()
		return nil
	}
	us := scriptCase(t, deadHolder, []role{sqliteUser, sqliteUser.called("sqlite 2")}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		remover, other := us[0], us[1]
		// The second removal at the mark's name: the first is of the
		// remover's temporary file (its own mark, not linked in place).
		if err := s.Reach(remover.User, "removing the dead mark", explore.At("remove", caseMark, 2)); err != nil {
			return err
		}
		if _, err := w.FS().Lstat(exploreLock + ".stale"); err != nil {
			return fmt.Errorf("the remover of a dead mark holds no guard: %w", err)
		}
		if err := s.Finish(other.User); err != nil {
			return err
		}
		if err := s.Reach(remover.User, "holding", inCritical); err != nil {
			return err
		}
		m := lockrec.ReadMark(w.FS(), exploreLock)
		if m.Holder() == nil || m.Holder().PID != remover.Proc.PID() {
			return fmt.Errorf("the mark names %v; want the holder, pid %d", m.Holder(), remover.Proc.PID())
		}
		return nil
	})
	if us[0].err != nil {
		t.Errorf("remover: %v; want it to hold", us[0].err)
	}
	if !errors.Is(us[1].err, proclock.ErrHeld) {
		t.Errorf("the other SQLite process: %v; want held", us[1].err)
	}
}

// A file process backs off from a file a SQLite process holds: it created
// the path, and before it wrote its stamp a SQLite process locked that
// very file and marked it. The file process, finding the live mark after
// its stamp, waits, then empties its stamp into an empty database (never
// removing the file the SQLite process holds) and reports the SQLite
// holder. The next file process reads the lock as held by the SQLite
// holder, and takes it at once when that one releases: an empty database
// without a mark is free.
//
// On the old code (75ae1bc) this failed ("file holds the lock while sqlite
// holds it"): the file process confirmed its stamp and held beside the
// SQLite holder.
func TestCaseFileBacksOffFromSQLiteHolder(t *testing.T) {
	us := scriptCase(t, nil, []role{fileUser, sqliteUser}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		file, sq := us[0], us[1]
		if err := s.Reach(file.User, "writing its stamp", explore.At("write", exploreLock, 1)); err != nil {
			return err
		}
		if err := s.Reach(sq.User, "holding", inCritical); err != nil {
			return err
		}
		if err := s.Finish(file.User); err != nil {
			return err
		}
		data, err := w.ReadFile(exploreLock)
		if err != nil || !bytes.Equal(data, lockrec.EmptyDatabase()) {
			return fmt.Errorf("the lock file after the file process backed off: %q, %v; want an empty database", data, err)
		}
		next := w.Spawn()
		pp := next.Platform().WithoutSQLite()
		_, err = proclock.Acquire(context.Background(), pp, exploreLock, proclock.Options{})
		if h, ok := errors.AsType[*proclock.HeldError](err); !ok || h.Holder == nil || h.Holder.PID != sq.Proc.PID() {
			return fmt.Errorf("the next file process while the SQLite process holds: %v; want held by pid %d", err, sq.Proc.PID())
		}
		if err := s.Finish(sq.User); err != nil {
			return err
		}
		l, err := proclock.Acquire(context.Background(), pp, exploreLock, proclock.Options{})
		if err != nil {
			return fmt.Errorf("the next file process once the SQLite holder released: %w", err)
		}
		return l.Release()
	})
	us[0].heldBy(t, us[1])
	if us[1].err != nil {
		t.Errorf("SQLite process: %v; want it to hold", us[1].err)
	}
}

// A file process converting a free database, under the guard, is between
// its second look at the lock file and the write when the file changes
// hands twice: a SQLite process (RemoveOnRelease) takes it and removes it
// as it lets go, and a second file process creates the path anew, which
// the filesystem gives the removed file's inode number. The converting
// process writes into the file it judged, and only that one: it holds its
// handle, so that file cannot be gone, nor its number taken, and its
// confirm then finds the path naming another file. It reports the second
// file process as the holder; that one holds alone, its stamp intact.
//
// On the old code (8d96903) this failed ("file holds the lock while file
// 2 holds it"): the converting process read the file by its path, then
// opened the path for writing and took the same inode number for the
// same file, overwrote the new holder's stamp and held beside it. The
// native mixed stress gave two holders that way about one run in twenty
// under load (docs/protocol.md, "The lock file is judged through the
// handle that writes it").
func TestCaseConvertMeetsReusedInodeNumber(t *testing.T) {
	file2 := fileUser.called("file 2")
	us := scriptCase(t, released, []role{fileUser, sqliteRemove, file2}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		file, sq, next := us[0], us[1], us[2]
		if err := s.Reach(file.User, "its look for a mark under the guard", lookingForMark(2)); err != nil {
			return err
		}
		if err := s.Finish(sq.User); err != nil {
			return err
		}
		if err := s.Reach(next.User, "holding", inCritical); err != nil {
			return err
		}
		stamp, err := w.ReadFile(exploreLock)
		if err != nil {
			return err
		}
		if err := s.Finish(file.User); err != nil {
			return err
		}
		if now, err := w.ReadFile(exploreLock); err != nil || !bytes.Equal(now, stamp) {
			return fmt.Errorf("the holder's lock file after the converter gave up: %q, %v; want its stamp %q", now, err, stamp)
		}
		return s.Finish(next.User)
	})
	us[0].heldBy(t, us[2])
	for _, c := range us[1:] {
		if c.err != nil {
			t.Errorf("%s: %v; want it to hold", c.Name, c.err)
		}
	}
}

// failWrites makes every write of c's process to the lock file fail with
// ENOSPC, as on a full disk: the file is created, its bytes are not.
// Added by the script, after the exploration's own hook, so that c still
// stops at each write first; an operation runs the hooks there were when
// it began, so it is added before c comes to its write.
// noLinks makes the world's filesystem one without hard links, as FAT
// is, nor renameat2's RENAME_NOREPLACE (which FAT has), as some FUSE and
// network filesystems are: link(2) fails with EPERM, the rename with
// EINVAL, and records are created with O_EXCL and
// then written, where a file created and not yet written can be found
// (docs/protocol.md, "Every record appears whole").
// There the 30 s rule is the protocol's, and a fresh process after the
// run may wait it out (afterRun).
func noLinks(w *fake.World) {
	linkless.Store(w, true)
	w.Before("rename-noreplace", "", func(fake.Event) error { return syscall.EINVAL })
	w.Before("link", "", func(fake.Event) error { return syscall.EPERM })
}

func failWrites(w *fake.World, c *caseUser) {
	w.Before("write", exploreLock, func(ev fake.Event) error {
		if ev.PID == c.Proc.PID() {
			return syscall.ENOSPC
		}
		return nil
	})
}

// A file process creates the lock file and fails to write its stamp
// (ENOSPC). Meanwhile a SQLite process has opened that very file, empty,
// taken its kernel's lock and checked that the path names it, and is about
// to mark it. The file process gives the file up without removing it: only
// holders remove the path (docs/protocol.md, "Why the order keeps two
// holders out"), and this file is about to be the SQLite process's. A
// second file process then finds the SQLite process's mark, and the lock
// held by it.
//
// On the old code (fd2db0d) this failed ("sqlite holds the lock while
// file 2 holds it"): the file process, finding the path still naming the
// file it created, removed it; the second file process created the path
// anew, stamped it, found no mark yet and held, and the SQLite process
// marked the removed file, found no stamp in it, and held too.
func TestCaseFailedStampLeavesSQLiteProcessesFile(t *testing.T) {
	us := failedFirstWrite(t, []role{fileUser, sqliteUser, fileUser.called("file 2")}, "writing its stamp", func(err error) error {
		if !errors.Is(err, syscall.ENOSPC) {
			return fmt.Errorf("file process: Acquire = %v; want ENOSPC", err)
		}
		return nil
	})
	if !errors.Is(us[2].err, proclock.ErrHeld) {
		t.Errorf("file 2: Acquire = %v; want held", us[2].err)
	}
	if us[1].err != nil {
		t.Errorf("SQLite process: %v; want it to hold", us[1].err)
	}
}

// failedFirstWrite scripts the failed-write cases over roles (the
// creator, a SQLite process, a third user): the creator's first write to
// the lock file fails with ENOSPC, while the SQLite process has opened
// that file, empty, taken its kernel's lock, checked that the path names
// it, and is about to mark it. The creator gives up (creatorErr judges
// its Acquire), the third user tries, and the SQLite process then holds.
func failedFirstWrite(t *testing.T, roles []role, writing string, creatorErr func(error) error) []*caseUser {
	t.Helper()
	return scriptCase(t, nil, roles, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		creator, sq, next := us[0], us[1], us[2]
		failWrites(w, creator)
		noLinks(w)
		// The second write at the lock's path: the first is into the
		// temporary file, whose link then fails.
		if err := s.Reach(creator.User, writing, explore.At("write", exploreLock, 2)); err != nil {
			return err
		}
		if err := s.Reach(sq.User, "its mark", creatingMark); err != nil {
			return err
		}
		if err := s.Finish(creator.User); err != nil {
			return err
		}
		if err := creatorErr(creator.err); err != nil {
			return err
		}
		// The path still names the SQLite process's file, not yet
		// marked: an empty file, held (a stamp may be on its way). On
		// the old code, a new file: the third user holds, and the
		// SQLite process reaching its critical section fails the run.
		if _, err := s.Until(next.User, inCritical); err != nil {
			return err
		}
		if err := s.Reach(sq.User, "holding", inCritical); err != nil {
			return err
		}
		return s.Finish(sq.User)
	})
}

// A SQLite process creates the lock file and fails to write the empty
// database into it (ENOSPC). Meanwhile a second SQLite process has opened
// that very file, empty, taken its kernel's lock and checked that the path
// names it, and is about to mark it. The first gives the file up without
// removing it (and, looking again, finds it held), and a file process
// then finds the lock held.
//
// On the old code (fd2db0d) this failed ("sqlite 2 holds the lock while
// file holds it"): the first process removed the file it had created; the
// file process created the path anew, stamped it, found no mark yet and
// held, and the second SQLite process marked the removed file, found no
// stamp in it, and held too.
func TestCaseFailedDatabaseLeavesSQLiteProcessesFile(t *testing.T) {
	roles := []role{sqliteUser, sqliteUser.called("sqlite 2"), fileUser}
	us := failedFirstWrite(t, roles, "writing the empty database", func(err error) error {
		if err == nil {
			return errors.New("the creator holds a lock whose file it could not write")
		}
		return nil
	})
	if !errors.Is(us[2].err, proclock.ErrHeld) {
		t.Errorf("file process: Acquire = %v; want held", us[2].err)
	}
	if us[1].err != nil {
		t.Errorf("SQLite process: %v; want it to hold", us[1].err)
	}
}

// windows: a SQLite holder with RemoveOnRelease cannot remove its file
// while its own connection has it open (go-sqlite3 opens without
// FILE_SHARE_DELETE), so it removes it just after letting go. In between,
// a file process converts the free database and holds it: its handle
// shares delete, as every handle of lockfs's does there, so nothing keeps
// the file in place. The releasing process must leave a file that is no
// longer its database; a second file process then finds the lock held by
// the first.
//
// On the old code (fd2db0d) this failed ("file 2 holds the lock while
// file holds it"): the releasing process found the path still naming the
// file it had locked, removed it from under the file holder, and the
// second file process created the path anew and held beside it.
func TestCaseRemoveAfterLettingGoMeetsFileHolder(t *testing.T) {
	holder := role{name: "sqlite(sql,remove) holder", sql: true, remove: true, holding: true}
	windows := func(w *fake.World) error {
		w.WindowsSharing()
		return nil
	}
	us := scriptCase(t, windows, []role{holder, fileUser, fileUser.called("file 2")}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		sq, file, next := us[0], us[1], us[2]
		if err := s.Reach(sq.User, "letting go", explore.At("close", exploreLock, 1)); err != nil {
			return err
		}
		if err := s.Step(sq.User); err != nil { // SQLite's handle closed: the lock let go of
			return err
		}
		if err := s.Reach(file.User, "holding", inCritical); err != nil {
			return err
		}
		if err := s.Finish(sq.User); err != nil {
			return err
		}
		if _, err := s.Until(next.User, inCritical); err != nil {
			return err
		}
		return s.Finish(file.User)
	})
	us[2].heldBy(t, us[1])
	if us[1].err != nil {
		t.Errorf("file process: %v; want it to hold", us[1].err)
	}
}

// windows: RemoveOnRelease still removes a file nobody took once its
// holder let go (under the guard, which it leaves behind it), and a
// process without an identity, which takes no guard, leaves its file in
// place for the next holder.
func TestRemoveAfterLettingGoWhenNobodyTookIt(t *testing.T) {
	ctx := context.Background()
	for _, known := range []bool{true, false} {
		w := fake.New()
		w.WindowsSharing()
		proc := w.Spawn()
		p := fakesql.SQLPlatform(proc)
		if !known {
			p.Process = failingProcess{self: errors.New("no identity here")}
		}
		l, err := proclock.Acquire(ctx, p, exploreLock, proclock.Options{RemoveOnRelease: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(); err != nil {
			t.Fatalf("identity known %v: Release: %v", known, err)
		}
		_, err = w.FS().Lstat(exploreLock)
		if gone := errors.Is(err, fs.ErrNotExist); gone != known {
			t.Errorf("identity known %v: the lock file after Release: %v; want it removed %v", known, err, known)
		}
		for _, name := range []string{caseMark, exploreLock + ".stale"} {
			if _, err := w.FS().Lstat(name); !errors.Is(err, fs.ErrNotExist) {
				t.Errorf("identity known %v: %s after Release: %v; want it gone", known, name, err)
			}
		}
	}
}

// One file, two names (x and a hard link y), a dead file holder's stamp
// in it. A SQLite process through y judges the stamp dead and, under y's
// guard, is about to write the empty database over it. A file process
// through x judges the same stamp dead and converts it under x's guard:
// another guard, the same file. SQLite's lock keeps the two writes apart:
// the clear writes under it, so the convert cannot take it and is held,
// holder unknown; the SQLite process then holds.
//
// On the old code (c242bfb) this failed ("sqlite via link holds the lock
// while file holds it"): the clear wrote without SQLite's lock, over the
// stamp the file process had written meanwhile, and then took the
// kernel's lock of a file that read free. TestHardLinkStaysOneLock met it
// natively under load: a file holder's release found its stamp gone, and
// once two processes inside at once.
func TestCaseClearThroughLinkMeetsConvert(t *testing.T) {
	us := scriptCase(t, scenario{stage: stageLinkedDeadStamp}.stageFiles, []role{sqliteUser.linked(), fileUser}, func(s *explore.Scripter, w *fake.World, us []*caseUser) error {
		sq, file := us[0], us[1]
		if err := s.Reach(sq.User, "clearing the dead stamp", explore.At("writeat", exploreLink, 1)); err != nil {
			return err
		}
		if holding, err := s.Until(file.User, inCritical); err != nil || !holding {
			return err
		}
		return s.Finish(sq.User) // two holders, if the file process holds
	})
	if us[0].err != nil {
		t.Errorf("sqlite via link: %v; want it to hold", us[0].err)
	}
	if !errors.Is(us[1].err, proclock.ErrHeld) || us[1].holder() != 0 {
		t.Errorf("file: Acquire = %v; want held, holder unknown (not the dead stamp's)", us[1].err)
	}
}
