package cli

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockfile"
	"github.com/proclock/proclock/platform"
)

// The lock lives as long as the job (docs/command.md, "The lock and
// COMMAND's processes"):
//   - proclock is the subreaper of COMMAND's processes: whatever COMMAND
//     leaves behind (a background child, a daemon that forked twice and
//     called setsid) becomes proclock's child when its parent ends, and
//     proclock holds the lock until the last of them has exited;
//   - COMMAND's processes inherit a descriptor of the lock's file that
//     holds its kernel locks (flock(1)'s way): should proclock be killed
//     (SIGKILL, the OOM killer), COMMAND dies of its parent-death signal,
//     and what it started keeps the lock for as long as one of them has
//     that descriptor open. A SQLite lock's file holds SQLite's byte-range
//     locks and a flock(2) lock, both of its open file description; a
//     lock file (the file mechanism) gets a flock(2) lock here, which both
//     mechanisms honour on a lock file whose stamp names a dead holder.

// inheritLockUnless is inheritLock for a lock of this host, unless close
// (-o) keeps the lock's descriptor from COMMAND; a backend's lock has no
// descriptor to pass.
func inheritLockUnless(close bool, cmd *exec.Cmd, held Held) error {
	h, host := held.(hostHeld)
	if close || !host {
		return nil
	}
	return inheritLock(cmd, h.p, h.Lock)
}

// inheritLock gives cmd, once started, a descriptor of lock's file that
// holds its kernel locks, and takes a flock(2) lock on a lock file of the
// file mechanism for it. A lock that has no such file (an FS that is not
// the OS's) is passed nothing: the subreaper alone keeps it.
func inheritLock(cmd *exec.Cmd, p *platform.Platform, lock *proclock.Lock) error {
	f, ok := lockfile.Of(lock).(*os.File)
	if !ok || f == nil {
		return nil
	}
	if lock.Mechanism() == proclock.MechanismFile {
		fl, ok := p.FS.(fsx.Flocker)
		if !ok {
			return nil
		}
		// Nobody else takes a flock(2) lock on a stamped file that
		// lives: one there is another's hold on this very file (flock(1),
		// a killed run's job), which a file mechanism that does not see
		// the kernel's locks missed. It is held, then.
		switch got, err := fl.TryFlock(f, true); {
		case err != nil:
			return fmt.Errorf("proclock run: a flock(2) lock on %s for COMMAND to inherit: %w", lock.Path(), err)
		case !got:
			return &proclock.HeldError{Path: lock.Path(), Reason: "a flock(2) lock"}
		}
	}
	cmd.ExtraFiles = append(cmd.ExtraFiles, f)
	return nil
}

// becomeSubreaper makes proclock the parent of every process COMMAND
// leaves behind (PR_SET_CHILD_SUBREAPER).
func becomeSubreaper() error {
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("proclock run: becoming the subreaper of COMMAND's processes: %w", err)
	}
	return nil
}

// watchJob is watch for COMMAND's whole job: it reaps every child of
// proclock (COMMAND, and what COMMAND left behind, reparented here), and
// reports COMMAND's stops as they come and its end only once no process
// of the job is left.
func watchJob(pid int, events chan<- childEvent) {
	for {
		var ws syscall.WaitStatus
		got, err := syscall.Wait4(-1, &ws, waitStops, nil)
		switch {
		case errors.Is(err, syscall.EINTR):
			continue
		case err != nil:
			events <- childEvent{err: err}
			return
		case got != pid:
			continue // a process COMMAND left, ended (or stopped): reaped
		}
		ev := childEvent{status: ws}
		if !ev.ended() {
			events <- ev
			continue
		}
		awaitLeftovers()
		events <- ev
		return
	}
}

// awaitLeftovers reaps proclock's children until none is left: the
// processes COMMAND left behind, which hold the job's lock while they run.
func awaitLeftovers() {
	for {
		_, err := syscall.Wait4(-1, nil, 0, nil)
		if err != nil && !errors.Is(err, syscall.EINTR) {
			return // ECHILD: the job is over
		}
	}
}
