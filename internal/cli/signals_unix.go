//go:build unix

package cli

import (
	"io"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// How COMMAND gets each signal once (docs/command.md, "Signals"):
//
//   - COMMAND runs in a process group of its own, so that a signal sent to
//     proclock's group (kill -- -PGID, timeout(1)) reaches proclock only;
//     proclock passes SIGINT, SIGTERM, SIGHUP and SIGQUIT on to COMMAND's
//     group, and SIGUSR1, SIGUSR2 and SIGWINCH.
//   - When proclock is a job of its own in the foreground of its terminal
//     (an interactive shell made it so), COMMAND's group becomes the
//     foreground instead, as a shell does for a job: Ctrl-C, Ctrl-\ and
//     Ctrl-Z reach COMMAND from the terminal, and proclock gets none of
//     them. proclock takes the terminal back when COMMAND ends.
//   - When proclock shares its group with its parent (a script), the
//     terminal's signals reach the script and proclock, which passes them
//     on; COMMAND gets the terminal only when it stops for it (a read, or
//     a change of terminal settings, from the background).
//   - Job control: when COMMAND stops for Ctrl-Z, proclock takes the
//     terminal back and stops too, so that the shell sees its job stop. A
//     Ctrl-Z that reaches proclock (in a script's group) is passed on,
//     and proclock stops at once. A SIGCONT (fg, bg) continues proclock,
//     which gives the terminal back to COMMAND if it had it and proclock
//     is in the foreground, and continues COMMAND.

// relayed are the signals proclock run passes on to COMMAND that, while
// proclock still waits for the lock, end the wait instead.
var relayed = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// passedOn are the other signals proclock run passes on to COMMAND, once
// it has started (ExecReload=kill -USR1 $MAINPID, a window's new size).
// While proclock waits for the lock they change nothing: the Go runtime
// catches and drops them, as it would have them for COMMAND.
var passedOn = []os.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH}

// shell runs -c's COMMAND when SHELL is unset.
const shell = "/bin/sh"

// childEvent is a change of COMMAND's state, as wait4 reports it: a stop,
// a continue, or its end.
type childEvent struct {
	status syscall.WaitStatus
	err    error
}

// ended reports whether the event is COMMAND's end (or a failure to wait
// for it, which ends the supervision too).
func (ev childEvent) ended() bool {
	return ev.err != nil || ev.status.Exited() || ev.status.Signaled()
}

// job is COMMAND's process group and the terminal proclock shares with
// it, when it has one.
type job struct {
	tty  *os.File // proclock's controlling terminal; nil without one
	pgid int      // COMMAND's process group
	own  int      // proclock's process group
	// lead: COMMAND's group is to have the terminal whenever proclock's
	// would.
	lead bool
	// passedStop: proclock has passed a SIGTSTP on to COMMAND and stopped
	// itself at once; COMMAND's stop that follows is not news.
	passedStop bool
	// stopSig stops proclock: SIGTSTP, unless proclock catches it (see
	// supervise); then SIGSTOP.
	stopSig syscall.Signal
}

// foreground is the terminal's foreground process group; -1 when unknown.
func (j *job) foreground() int {
	pg, err := unix.IoctlGetInt(int(j.tty.Fd()), unix.TIOCGPGRP)
	if err != nil {
		return -1
	}
	return pg
}

// give makes pgid the terminal's foreground group.
func (j *job) give(pgid int) error {
	return setForeground(int(j.tty.Fd()), pgid)
}

// takeBack gives the terminal back to proclock's group if COMMAND's has
// it, so that proclock's parent finds it as it left it.
func (j *job) takeBack() {
	if j.tty != nil && j.foreground() == j.pgid {
		_ = j.give(j.own)
	}
}

// resume continues COMMAND, giving it the terminal if it leads and
// proclock has the terminal.
func (j *job) resume() {
	if j.tty != nil && j.lead && j.foreground() == j.own {
		_ = j.give(j.pgid)
	}
	_ = syscall.Kill(-j.pgid, syscall.SIGCONT)
}

// stopped handles a stop of COMMAND by sig.
func (j *job) stopped(sig syscall.Signal) {
	if sig == syscall.SIGTSTP && j.passedStop {
		j.passedStop = false
		return
	}
	if j.tty == nil || (sig != syscall.SIGTSTP && sig != syscall.SIGTTIN && sig != syscall.SIGTTOU) {
		// No job control without a terminal, and a SIGSTOP is someone's
		// deliberate act: COMMAND waits for a SIGCONT, and proclock
		// with it.
		return
	}
	if sig != syscall.SIGTSTP && j.foreground() == j.own && j.give(j.pgid) == nil {
		// COMMAND, in the background of a proclock that has the
		// terminal, wanted it: it has it now, and keeps it.
		j.lead = true
		_ = syscall.Kill(-j.pgid, syscall.SIGCONT)
		return
	}
	stop := j.stopSig // proclock ignores SIGTTOU
	if sig == syscall.SIGTTIN {
		stop = sig
	}
	j.stop(stop)
}

// stop gives the terminal back to proclock's group if COMMAND has it, and
// stops proclock with sig: its parent sees its job stop. The SIGCONT that
// continues proclock comes to supervise.
func (j *job) stop(sig syscall.Signal) {
	j.takeBack()
	_ = syscall.Kill(os.Getpid(), sig)
}

// passStop passes a SIGTSTP that proclock got (the terminal's, when
// proclock shares its group with a script) on to COMMAND, and stops
// proclock at once: the script stops at once too, and its shell may
// continue the job before COMMAND's stop is seen.
func (j *job) passStop() {
	_ = syscall.Kill(-j.pgid, syscall.SIGTSTP)
	j.passedStop = true
	j.stop(j.stopSig)
}

// terminal opens proclock's controlling terminal and reports whether
// proclock's group is its foreground job. It returns nil when there is no
// controlling terminal.
func terminal() (tty *os.File, foreground bool) {
	tty, err := os.OpenFile("/dev/tty", os.O_RDWR, 0)
	if err != nil {
		return nil, false
	}
	fg, err := unix.IoctlGetInt(int(tty.Fd()), unix.TIOCGPGRP)
	return tty, err == nil && fg == ownGroup()
}

// supervise starts COMMAND in a process group of its own, in the
// terminal's foreground when proclock is a foreground job of its own,
// passes signals on to it and follows its stops until it ends. It returns
// the exit code for its end, and the signal that killed it, if one did.
//
// g, COMMAND's guard, is handed COMMAND once it has started (startTied).
func supervise(cmd *exec.Cmd, sigs <-chan os.Signal, stderr io.Writer, g *guard) (int, os.Signal) {
	tty, foreground := terminal()
	if tty != nil {
		defer tty.Close()
	}
	lead := jobControl && foreground && ownGroup() == os.Getpid()
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if lead {
		// The child makes its group the foreground itself, before it
		// runs COMMAND: no Ctrl-C falls between the two.
		cmd.SysProcAttr.Foreground, cmd.SysProcAttr.Ctty = true, int(tty.Fd())
	}
	conts := make(chan os.Signal, 1)
	signal.Notify(conts, syscall.SIGCONT)
	defer signal.Stop(conts)
	// Only proclock in a script's group gets the terminal's SIGTSTP, to
	// pass on; elsewhere SIGTSTP keeps its default, which stops
	// proclock (Go cannot give a caught signal its default back).
	stops := make(chan os.Signal, 1)
	stopSig := syscall.SIGTSTP
	if !lead && !signal.Ignored(syscall.SIGTSTP) {
		signal.Notify(stops, syscall.SIGTSTP)
		defer signal.Stop(stops)
		stopSig = syscall.SIGSTOP
	}
	events, err := startTied(cmd, g, stderr)
	if err != nil {
		return cannotStart(stderr, cmd.Args[0], err), nil
	}
	// From here proclock moves the terminal while it is in the
	// background, which SIGTTOU would stop. COMMAND has started: it does
	// not inherit the ignoring.
	signal.Ignore(syscall.SIGTTOU)
	j := &job{tty: tty, pgid: cmd.Process.Pid, own: ownGroup(), lead: lead, stopSig: stopSig}
	for {
		select {
		case sig := <-sigs:
			// An error means COMMAND has just exited: its status follows.
			_ = syscall.Kill(-j.pgid, sig.(syscall.Signal))
		case <-stops:
			j.passStop()
		case <-conts:
			j.resume()
		case ev := <-events:
			switch {
			case ev.err != nil:
				j.takeBack()
				complain(stderr, ev.err)
				return exitUsage, nil
			case ev.status.Stopped():
				j.stopped(ev.status.StopSignal())
			case ev.status.Signaled():
				j.takeBack()
				return 128 + int(ev.status.Signal()), ev.status.Signal()
			case ev.status.Exited():
				j.takeBack()
				return ev.status.ExitStatus(), nil
			}
		}
	}
}

// dieOf ends proclock by sig, after COMMAND died of it or it stopped the
// wait for the lock, when sig is SIGINT: a shell that runs proclock from a
// script then stops the script too, as it would have had COMMAND been its
// own child (a wait status of "exited 130" does not do that). Other
// signals end proclock with 128+N.
func dieOf(sig os.Signal) {
	if sig != syscall.SIGINT || signal.Ignored(sig) {
		return
	}
	signal.Reset(sig)
	_ = syscall.Kill(os.Getpid(), syscall.SIGINT)
	// The signal is on its way; the exit code that follows is only for
	// the case it is somehow not delivered.
	time.Sleep(time.Second)
}

// ownGroup is proclock's process group.
func ownGroup() int {
	pg, _ := unix.Getpgid(0)
	return pg
}
