//go:build unix

package cli

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// detach starts proclock in a session of its own, without a controlling
// terminal: when the tests run in a terminal, proclock must not take
// signals the test sends for a Ctrl-C of that terminal.
func detach(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
}

// helperMainOS are the helper modes that need unix.
func helperMainOS(args []string) int {
	switch args[0] {
	case "trap":
		// Reports the signal it gets, then exits 3.
		sigs := make(chan os.Signal, 1)
		signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
		fmt.Println("started")
		fmt.Println("caught", <-sigs)
		return 3
	case "count":
		return countSignals()
	case "jobshell":
		return jobShell(args[1:])
	case "selfkill":
		syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	case "fds":
		// Lists the files this process and its parent (proclock) have
		// open, as "self <dev:ino> <target>" and "parent <dev:ino>
		// <target>" lines (dev:ino "-" where the target is no file), and
		// first, given a path, "lock <dev:ino> <path>" for it.
		if len(args) > 1 {
			var st unix.Stat_t
			if err := unix.Stat(args[1], &st); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 2
			}
			fmt.Printf("lock %d:%d %s\n", st.Dev, st.Ino, args[1])
		}
		listFDs("self", "/proc/self/fd")
		listFDs("parent", fmt.Sprintf("/proc/%d/fd", os.Getppid()))
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown helper mode", args[0])
	return 2
}

func listFDs(who, dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	for _, e := range entries {
		fd := filepath.Join(dir, e.Name())
		target, err := os.Readlink(fd)
		if err != nil {
			continue
		}
		id := "-"
		var st unix.Stat_t
		if unix.Stat(fd, &st) == nil {
			id = fmt.Sprintf("%d:%d", st.Dev, st.Ino)
		}
		fmt.Println(who, id, target)
	}
}

// TestRunSignals: SIGINT, SIGTERM and SIGHUP sent to proclock reach
// COMMAND, and proclock exits with COMMAND's status.
func TestRunSignals(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP} {
		lock := filepath.Join(t.TempDir(), "x.lock")
		r := startProclock(t, line("run", lock, helper("trap"))...)
		r.expectLine("started")
		if err := r.cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		r.expectLine("caught " + sig.String())
		if res := r.wait(); res.code != 3 {
			t.Errorf("%v: exit %d, want COMMAND's 3; stderr: %s", sig, res.code, res.stderr)
		}
		if st := statusJSON(t, lock); st.State == "held" {
			t.Errorf("%v: lock still held after proclock exited", sig)
		}
	}
}

// TestRunKeepsIgnoredSignals: a signal proclock was started ignoring (as
// under nohup) stays ignored: proclock neither dies of it nor passes it on.
func TestRunKeepsIgnoredSignals(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "x.lock")
	script := `trap "" HUP; exec "$0" "$@"`
	r := startShell(t, line("sh", "-c", script, bin, "run", lock, helper("trap"))...)
	r.expectLine("started")
	// The kernel delivers SIGHUP before SIGTERM: had proclock passed the
	// SIGHUP on, COMMAND would report it first.
	if err := r.cmd.Process.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	r.expectLine("caught " + syscall.SIGTERM.String())
	if res := r.wait(); res.code != 3 {
		t.Errorf("exit %d, want COMMAND's 3; stderr: %s", res.code, res.stderr)
	}
}

// TestRunSIGTERM: a COMMAND that SIGTERM kills makes proclock exit 143,
// and a COMMAND that SIGKILLs itself 137.
func TestRunSIGTERM(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "x.lock")
	r := holdLock(t, "run", lock)
	if err := r.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	if res := r.wait(); res.code != 143 {
		t.Errorf("SIGTERM: exit %d, want 143; stderr: %s", res.code, res.stderr)
	}
	if res := runProclock(t, line("run", lock, helper("selfkill"))...); res.code != 137 {
		t.Errorf("COMMAND killed by SIGKILL: exit %d, want 137; stderr: %s", res.code, res.stderr)
	}
}

// TestRunSignalWhileWaiting: a signal while proclock waits for the lock
// ends the wait with 128+N, and COMMAND never starts.
func TestRunSignalWhileWaiting(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "x.lock")
	a := holdLock(t, "run", lock)

	// -v says on stderr when b starts waiting, after it has caught its
	// signals: then the SIGTERM is b's to handle.
	b := proclockCmd(line("run", "-v", lock, helper("echo", "b ran")))
	errR, errW := pipe(t)
	var out strings.Builder
	b.Stdout, b.Stderr = &out, errW
	if err := b.Start(); err != nil {
		t.Fatal(err)
	}
	errW.Close()
	defer errR.Close()
	errR.SetReadDeadline(time.Now().Add(deadline))
	waiting, err := bufio.NewReader(errR).ReadString('\n')
	if err != nil || !strings.Contains(waiting, fmt.Sprintf("pid %d ", a.cmd.Process.Pid)) || !strings.Contains(waiting, "waiting") {
		t.Fatalf("-v: stderr %q, %v; want a line saying it waits for pid %d", waiting, err, a.cmd.Process.Pid)
	}
	if err := b.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	b.Wait()
	if code := b.ProcessState.ExitCode(); code != 143 {
		t.Errorf("SIGTERM while waiting: exit %d, want 143", code)
	}
	if out.Len() != 0 {
		t.Errorf("COMMAND ran after the wait was cancelled: %q", out.String())
	}
	a.release()
}

// TestRunKilled: a proclock killed with SIGKILL takes its COMMAND along,
// and the next run gets the lock: at once with sqlite, and with the file
// mechanism on its next attempt, the dead holder's file being stale.
func TestRunKilled(t *testing.T) {
	if runtime.GOOS != "linux" && runtime.GOOS != "freebsd" {
		t.Skip("no parent-death signal on " + runtime.GOOS)
	}
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			a := holdLock(t, "run", "--mechanism", mech, lock)
			pid := a.cmd.Process.Pid
			if err := a.cmd.Process.Kill(); err != nil {
				t.Fatal(err)
			}
			a.wait()
			// COMMAND holds the write end of a's stdout: EOF says it is gone.
			a.stdout.SetReadDeadline(time.Now().Add(deadline))
			if _, err := io.ReadAll(a.stdout); err != nil {
				t.Fatalf("COMMAND outlived proclock: %v", err)
			}

			st := statusJSON(t, lock, "--mechanism", mech)
			switch mech {
			case "sqlite":
				if st.State != "free" {
					t.Errorf("status after the holder's death: %+v, want free", st)
				}
			case "file":
				if st.State != "stale" || st.Reason != "pid gone" || st.Holder == nil || st.Holder.PID != pid {
					t.Errorf("status after the holder's death: %+v, want stale, pid gone, holder %d", st, pid)
				}
				res := runProclock(t, "status", lock)
				if res.code != 0 || !strings.Contains(res.stdout, "stale") || !strings.Contains(res.stdout, fmt.Sprintf("pid %d ", pid)) {
					t.Errorf("status after the holder's death: exit %d, %q; want 0, stale, pid %d", res.code, res.stdout, pid)
				}
			}
			if res := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...); res.code != 0 {
				t.Errorf("next run -n: exit %d, want 0; stderr: %s", res.code, res.stderr)
			}
		})
	}
}

// TestRunLockInherited: COMMAND has the lock's file open once, as
// proclock does (on linux: the descriptor whose kernel locks keep the lock
// for COMMAND's processes should proclock be killed, docs/command.md, "The
// lock and COMMAND's processes"), and no other file of the lock. Files are
// told apart by device and inode; /proc names a descriptor by the name it
// was opened through, and a lock file written whole, opened through its
// temporary name, shows the lock's path there, since the temporary file
// is renamed to it (docs/protocol.md, "Every record appears whole"; it
// showed "x.lock.new-<pid>-<random> (deleted)" when linked).
func TestRunLockInherited(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc/<pid>/fd, and only linux passes the lock on")
	}
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			res := runProclock(t, line("run", "--mechanism", mech, lock, helper("fds", lock))...)
			if res.code != 0 {
				t.Fatalf("exit %d; stderr: %s", res.code, res.stderr)
			}
			first, _, _ := strings.Cut(res.stdout, "\n")
			f := strings.SplitN(first, " ", 3)
			if len(f) != 3 || f[0] != "lock" || f[2] != lock {
				t.Fatalf("helper's first line %q: want the lock file's dev:ino", first)
			}
			lockID := f[1]
			var self, selfHasLock, parentHasLock int
			for l := range strings.Lines(res.stdout) {
				f := strings.SplitN(strings.TrimSpace(l), " ", 3)
				if len(f) != 3 {
					t.Fatalf("helper line %q: want who, dev:ino, target", l)
				}
				who, id, target := f[0], f[1], f[2]
				if who == "lock" {
					continue
				}
				isLock := id == lockID || strings.HasPrefix(target, lock)
				switch {
				case who == "self" && id == lockID:
					selfHasLock++
					if target != lock {
						t.Errorf("COMMAND's descriptor of the lock file is named %q in /proc, want %q", target, lock)
					}
				case who == "self" && isLock:
					t.Errorf("COMMAND has %s open", target)
				case who == "self":
					self++
				case isLock:
					parentHasLock++
				}
			}
			if self < 3 || selfHasLock != 1 {
				t.Errorf("COMMAND lists %d files beside %d of the lock file (%s), want stdin, stdout and stderr at least, and the lock file once:\n%s", self, selfHasLock, lockID, res.stdout)
			}
			if parentHasLock == 0 {
				t.Errorf("proclock has no file of the lock open:\n%s", res.stdout)
			}
		})
	}
}

// TestRunCannotExecute: a COMMAND that is not executable exits 126,
// touching no lock.
func TestRunCannotExecute(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock := filepath.Join(dir, "x.lock")
	script := filepath.Join(dir, "script")
	if err := os.WriteFile(script, []byte("#!/bin/sh\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, command := range []string{script, dir} {
		res := runProclock(t, "run", lock, "--", command)
		if res.code != 126 {
			t.Errorf("%s: exit %d, want 126; stderr: %s", command, res.code, res.stderr)
		}
		oneLine(t, command+": stderr", res.stderr)
	}
	if _, err := os.Lstat(lock); err == nil {
		t.Error("a COMMAND that cannot run took the lock")
	}
}

// countSignals is a COMMAND that counts the signals it gets: it says
// "started PID parent PPID", then "caught NAME" for each SIGINT and SIGHUP and "continued" for a SIGCONT,
// and on SIGTERM, which the tests send last, prints the counts and exits
// 3. A SIGTSTP stops it.
func countSignals() int {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGCONT,
		syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH)
	fmt.Println("started", os.Getpid(), "parent", os.Getppid())
	counts := map[os.Signal]int{}
	for sig := range sigs {
		switch sig {
		case syscall.SIGCONT:
			fmt.Println("continued")
		case syscall.SIGTERM:
			fmt.Printf("counted interrupt=%d hangup=%d usr1=%d usr2=%d winch=%d\n", counts[syscall.SIGINT], counts[syscall.SIGHUP],
				counts[syscall.SIGUSR1], counts[syscall.SIGUSR2], counts[syscall.SIGWINCH])
			return 3
		default:
			counts[sig]++
			fmt.Println("caught", sig)
		}
	}
	return 2
}

// jobShell runs args (proclock's command line) as an interactive shell
// runs a job: in a process group of its own, given the terminal (its
// stdin) in the foreground. It reports on descriptor 4 "job PID" when the
// job has started, "stopped" when it stops (having taken the terminal
// back), and "exit STATUS fg=PGID" (or "killed SIGNAL fg=PGID") when it
// ends, with the terminal's foreground group at that moment; "fg" on descriptor 3 continues a
// stopped job in the foreground, as the shell's fg does.
func jobShell(args []string) int {
	ctl := bufio.NewScanner(os.NewFile(3, "control"))
	report := os.NewFile(4, "report")
	job := exec.Command(args[0], args[1:]...)
	job.Stdin, job.Stdout, job.Stderr = os.Stdin, os.Stdout, os.Stderr
	job.SysProcAttr = &syscall.SysProcAttr{Foreground: true, Ctty: 0}
	if err := job.Start(); err != nil {
		fmt.Fprintln(report, "error", err)
		return 2
	}
	// As a shell, move the terminal from the background without being
	// stopped for it; the job has started and does not inherit this.
	signal.Ignore(syscall.SIGTTOU)
	pid := job.Process.Pid
	fmt.Fprintln(report, "job", pid)
	for {
		var ws syscall.WaitStatus
		if _, err := syscall.Wait4(pid, &ws, waitStops, nil); err != nil {
			if err == syscall.EINTR {
				continue
			}
			fmt.Fprintln(report, "error", err)
			return 2
		}
		if ws.Stopped() {
			setForeground(0, ownGroup())
			fmt.Fprintln(report, "stopped")
			if !ctl.Scan() || ctl.Text() != "fg" {
				fmt.Fprintln(report, "error: want fg")
				return 2
			}
			setForeground(0, pid)
			syscall.Kill(-pid, syscall.SIGCONT)
			continue
		}
		fg, _ := unix.IoctlGetInt(0, unix.TIOCGPGRP)
		setForeground(0, ownGroup())
		if ws.Signaled() {
			fmt.Fprintf(report, "killed %v fg=%d\n", ws.Signal(), fg)
		} else {
			fmt.Fprintf(report, "exit %d fg=%d\n", ws.ExitStatus(), fg)
		}
		return 0
	}
}
