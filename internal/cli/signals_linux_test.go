package cli

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// The signal tests count what COMMAND (the "count" helper) receives. Each
// sends the signal under test, waits for COMMAND to report it, then sends
// SIGTERM to proclock as a fence: SIGTERM is numbered above SIGINT and
// SIGHUP, so a second copy of either, already on its way through proclock,
// is delivered before the SIGTERM that makes COMMAND print its counts.

// TestJobControlInScript: proclock run from a script, in the script's
// process group, behaves as COMMAND would without it: the terminal's
// Ctrl-Z stops COMMAND, proclock and the script, fg continues them, a
// Ctrl-C reaches COMMAND once, and the script ends as it does when it runs
// COMMAND itself.
func TestJobControlInScript(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh for the script")
	}
	script := `"$0" "$@"; echo "script goes on"`
	lock := filepath.Join(t.TempDir(), "x.lock")
	var ends []string
	for _, job := range [][]string{
		line("sh", "-c", script, helperRole.Argv("count")),
		line("sh", "-c", script, bin, "run", lock, helper("count")),
	} {
		j := startJob(t, job...)
		withProclock := j.parent != j.proclock
		if fg := j.foreground(); fg != j.proclock {
			t.Fatalf("%q: terminal's foreground group %d, want the script's %d", job, fg, j.proclock)
		}
		j.ctrl('Z')
		j.expectReport("stopped")
		for _, pid := range []int{j.command, j.parent, j.proclock} {
			waitStopped(t, pid)
		}
		fmt.Fprintln(j.control, "fg")
		j.expectTTY("continued")
		j.ctrl('C')
		j.expectTTY("caught interrupt")
		if !withProclock {
			j.parent = j.command // the fence goes to COMMAND itself
		}
		j.fence()
		j.expectTTY("counted interrupt=1 hangup=0")
		end, _, _ := strings.Cut(j.expectReport("fg="), " fg=")
		ends = append(ends, end)
	}
	t.Logf("the script ends with %q", ends)
	if ends[0] != ends[1] {
		t.Errorf("the script ended with %q running COMMAND itself, but %q through proclock", ends[0], ends[1])
	}
}

// readLine reads COMMAND's next line of output.
func (r *running) readLine() string {
	r.t.Helper()
	r.stdout.SetReadDeadline(time.Now().Add(deadline))
	got, err := r.lines.ReadString('\n')
	if err != nil {
		r.t.Fatalf("proclock %q: read %q, %v; stderr: %s", r.cmd.Args[1:], got, err, r.readStderr())
	}
	return strings.TrimSpace(got)
}

// TestSignalsReachCommandOnce: a signal sent to proclock's pid, to its
// process group, or from its terminal reaches COMMAND exactly once.
func TestSignalsReachCommandOnce(t *testing.T) {
	for _, sender := range []struct {
		name string
		kill func(pid int, sig syscall.Signal) error
	}{
		{"pid", syscall.Kill},
		{"process group", func(pid int, sig syscall.Signal) error { return syscall.Kill(-pid, sig) }},
	} {
		t.Run(sender.name, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			// detach makes proclock the leader of its own group.
			r := startProclock(t, line("run", lock, helper("count"))...)
			if got := r.readLine(); !strings.HasPrefix(got, "started ") {
				t.Fatalf("COMMAND said %q, want started", got)
			}
			pid := r.cmd.Process.Pid
			// Those that end a wait for the lock, and those passed on only
			// (docs/command.md, "Signals").
			for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH} {
				if err := sender.kill(pid, sig); err != nil {
					t.Fatal(err)
				}
				r.expectLine("caught " + sig.String())
			}
			if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
				t.Fatal(err)
			}
			r.expectLine("counted interrupt=1 hangup=1 usr1=1 usr2=1 winch=1")
			if res := r.wait(); res.code != 3 {
				t.Errorf("exit %d, want COMMAND's 3; stderr: %s", res.code, res.stderr)
			}
		})
	}
	t.Run("terminal", func(t *testing.T) {
		t.Parallel()
		j := startJob(t, line(bin, "run", filepath.Join(t.TempDir(), "x.lock"), helper("count"))...)
		j.ctrl('C')
		j.expectTTY("caught interrupt")
		// A new size of the window: the terminal signals its foreground
		// group, COMMAND's.
		if err := unix.IoctlSetWinsize(int(j.master.Fd()), unix.TIOCSWINSZ, &unix.Winsize{Row: 40, Col: 100}); err != nil {
			t.Fatal(err)
		}
		j.expectTTY("caught window changed")
		j.fence()
		j.expectTTY("counted interrupt=1 hangup=0 usr1=0 usr2=0 winch=1")
		j.expectExit(3)
	})
}

// TestJobControl: with proclock run as a job of an interactive shell,
// COMMAND has the terminal; Ctrl-Z stops COMMAND and proclock, and the
// shell gets the terminal back; fg continues both and gives COMMAND the
// terminal again, where a Ctrl-C reaches it once; at the end proclock has
// the terminal back.
func TestJobControl(t *testing.T) {
	t.Parallel()
	j := startJob(t, line(bin, "run", filepath.Join(t.TempDir(), "x.lock"), helper("count"))...)
	if fg := j.foreground(); fg != j.command {
		t.Fatalf("terminal's foreground group %d, want COMMAND's %d", fg, j.command)
	}
	j.ctrl('Z')
	j.expectReport("stopped")
	for _, pid := range []int{j.command, j.proclock} {
		waitStopped(t, pid)
	}
	if fg := j.foreground(); fg != j.shell { // the session leader: its group is its pid
		t.Errorf("after Ctrl-Z the terminal's foreground is %d, want the shell's group", fg)
	}
	fmt.Fprintln(j.control, "fg")
	j.expectTTY("continued")
	if fg := j.foreground(); fg != j.command {
		t.Errorf("after fg the terminal's foreground group is %d, want COMMAND's %d", fg, j.command)
	}
	j.ctrl('C')
	j.expectTTY("caught interrupt")
	j.fence()
	j.expectTTY("counted interrupt=1 hangup=0")
	if fg := j.expectExit(3); fg != j.proclock {
		t.Errorf("when proclock exited the terminal's foreground was %d, want proclock's group %d", fg, j.proclock)
	}
}

// ptyJob is proclock run as a job of jobShell on a terminal of its own.
type ptyJob struct {
	t        *testing.T
	master   *os.File    // the terminal's master side: what a user types, and sees
	tty      chan string // lines the terminal shows
	report   chan string // jobShell's reports
	control  *os.File    // jobShell's commands
	shell    int         // jobShell's pid, and its process group
	proclock int         // proclock's pid, and its process group
	command  int         // COMMAND's pid, and its process group
	parent   int         // COMMAND's parent: proclock, or the script that runs COMMAND itself
}

// startJob starts jobShell as the session leader of a new terminal,
// running the job args (the program first), and returns once COMMAND
// has started.
func startJob(t *testing.T, args ...string) *ptyJob {
	t.Helper()
	master, slave := openPTY(t)
	ctlR, ctlW := pipe(t)
	repR, repW := pipe(t)
	cmd := proclockCmd(append([]string{"jobshell"}, args...))
	cmd.Path, cmd.Args = testBinary, helperRole.Argv(cmd.Args[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	cmd.ExtraFiles = []*os.File{ctlR, repW}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	slave.Close()
	ctlR.Close()
	repW.Close()
	j := &ptyJob{t: t, master: master, tty: lines(master), report: lines(repR), control: ctlW, shell: cmd.Process.Pid}
	t.Cleanup(func() {
		ctlW.Close()
		syscall.Kill(-j.shell, syscall.SIGKILL)
		if j.proclock != 0 {
			syscall.Kill(-j.proclock, syscall.SIGKILL)
		}
		if j.command != 0 {
			syscall.Kill(-j.command, syscall.SIGKILL)
		}
		cmd.Wait()
		master.Close()
		repR.Close()
	})
	j.proclock = atoiAfter(t, j.expectReport("job "), "job ")
	started := j.expectTTY("started ")
	j.command = atoiAfter(t, started, "started ")
	j.parent = atoiAfter(t, started, " parent ")
	return j
}

// openPTY opens a new pseudo-terminal.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	if err := unix.IoctlSetPointerInt(int(master.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatal(err)
	}
	n, err := unix.IoctlGetInt(int(master.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatal(err)
	}
	slave, err = os.OpenFile("/dev/pts/"+strconv.Itoa(n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Fatal(err)
	}
	return master, slave
}

// lines sends f's lines, without line ends, until it ends.
func lines(f *os.File) chan string {
	ch := make(chan string, 64)
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			ch <- strings.TrimRight(sc.Text(), "\r")
		}
	}()
	return ch
}

// expect reads lines from ch until one contains want, and returns it.
func (j *ptyJob) expect(what string, ch chan string, want string) string {
	j.t.Helper()
	var seen []string
	timeout := time.After(deadline)
	for {
		select {
		case l, ok := <-ch:
			if !ok {
				j.t.Fatalf("%s ended before %q; it said %q", what, want, seen)
			}
			if strings.Contains(l, want) {
				return l
			}
			seen = append(seen, l)
		case <-timeout:
			j.t.Fatalf("%s: no %q in %v; it said %q", what, want, deadline, seen)
		}
	}
}

func (j *ptyJob) expectTTY(want string) string {
	j.t.Helper()
	return j.expect("terminal", j.tty, want)
}
func (j *ptyJob) expectReport(want string) string {
	j.t.Helper()
	return j.expect("shell", j.report, want)
}

// expectExit waits for the shell to report proclock's exit with code, and
// returns the terminal's foreground group at that moment.
func (j *ptyJob) expectExit(code int) int {
	j.t.Helper()
	l := j.expectReport("exit ")
	var got, fg int
	if _, err := fmt.Sscanf(l, "exit %d fg=%d", &got, &fg); err != nil || got != code {
		j.t.Fatalf("shell reported %q, want exit %d", l, code)
	}
	return fg
}

// ctrl types Ctrl and c on the terminal.
func (j *ptyJob) ctrl(c byte) {
	j.t.Helper()
	if _, err := j.master.Write([]byte{c & 0x1f}); err != nil {
		j.t.Fatal(err)
	}
}

// fence sends proclock the SIGTERM that makes COMMAND print its counts.
func (j *ptyJob) fence() {
	j.t.Helper()
	if err := syscall.Kill(j.parent, syscall.SIGTERM); err != nil {
		j.t.Fatal(err)
	}
}

// foreground is the terminal's foreground process group.
func (j *ptyJob) foreground() int {
	j.t.Helper()
	fg, err := unix.IoctlGetInt(int(j.master.Fd()), unix.TIOCGPGRP)
	if err != nil {
		j.t.Fatal(err)
	}
	return fg
}

// procState is the state letter of process pid (R, S, T, Z ...).
func procState(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// pid (comm) state ...: comm may hold spaces and parentheses.
	_, rest, _ := strings.Cut(string(b), ") ")
	state, _, _ := strings.Cut(rest, " ")
	return state
}

// waitStopped waits for process pid to be stopped. Nothing tells a
// process that is not the parent when another stops: it looks until it
// sees it, for as long as deadline.
func waitStopped(t *testing.T, pid int) {
	t.Helper()
	state := ""
	for end := time.Now().Add(deadline); time.Now().Before(end); runtime.Gosched() {
		if state = procState(t, pid); state == "T" {
			return
		}
	}
	t.Errorf("pid %d is in state %q after Ctrl-Z, want T (stopped)", pid, state)
}

// atoiAfter reads the number after prefix in l.
func atoiAfter(t *testing.T, l, prefix string) int {
	t.Helper()
	_, after, _ := strings.Cut(l, prefix)
	n, err := strconv.Atoi(strings.Fields(after + " x")[0])
	if err != nil {
		t.Fatalf("%q: no number after %q", l, prefix)
	}
	return n
}

// TestPassedOnSignalsKeepTheWait: SIGUSR1, SIGUSR2 and SIGWINCH, which
// proclock passes on to COMMAND, do not end a wait for the lock (a
// reload, or a window's new size, is no reason to give up): proclock
// takes the lock when its holder lets go and runs COMMAND.
func TestPassedOnSignalsKeepTheWait(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "x.lock")
	holder := holdLock(t, "run", lock)
	r := startProclock(t, line("run", "-v", lock, helper("echo", "ran"))...)
	waitFor(t, "proclock to say it waits", func() bool { return strings.Contains(r.readStderr(), "; waiting") })
	pid := r.cmd.Process.Pid
	for _, sig := range []syscall.Signal{syscall.SIGUSR1, syscall.SIGUSR2, syscall.SIGWINCH} {
		if err := syscall.Kill(pid, sig); err != nil {
			t.Fatal(err)
		}
	}
	// Delivered (no longer pending) before the holder lets go: had they
	// ended the wait, proclock would be gone by then.
	waitFor(t, "the signals to be delivered", func() bool { return sharedPending(t, pid)&(1<<9|1<<11|1<<27) == 0 })
	holder.release()
	r.expectLine("ran")
	if res := r.wait(); res.code != 0 {
		t.Errorf("exit %d, want 0; stderr: %s", res.code, res.stderr)
	}
}

// waitFor looks until cond holds, for as long as deadline: nothing tells
// the test of what it waits for.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for end := time.Now().Add(deadline); time.Now().Before(end); runtime.Gosched() {
		if cond() {
			return
		}
	}
	t.Fatalf("waited %v for %s", deadline, what)
}

// sharedPending is process pid's set of pending signals (ShdPnd: bit N-1
// for signal N).
func sharedPending(t *testing.T, pid int) uint64 {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for l := range strings.Lines(string(b)) {
		if hex, ok := strings.CutPrefix(l, "ShdPnd:"); ok {
			n, err := strconv.ParseUint(strings.TrimSpace(hex), 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatal("no ShdPnd in /proc/PID/status")
	return 0
}
