package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

const runUsage = `Usage: proclock run [-n] [-w DURATION] [-E CODE] [--remove] [--mechanism auto|sqlite|file] [-v] PATH -- COMMAND [ARGS...]

Takes the lock at PATH, runs COMMAND while holding it, then releases the lock
and exits with COMMAND's exit status (128+N when signal N killed it). Like
flock(1) it waits for the lock by default.

Options:
  -n             do not wait: fail at once if the lock is held
  -w DURATION    give up waiting after DURATION (200ms, 30s, 5m); 0 is -n
  -E CODE        exit with CODE (0-255) instead of 1 when the lock is held
                 or the wait runs out
  --remove       remove the lock's files on release (the sqlite mechanism
                 leaves an empty database file otherwise; the file
                 mechanism always removes its lock file)
  --mechanism M  auto (the default: sqlite where this system has it, else
                 file), sqlite, or file. Users of one PATH may use either:
                 they keep each other out.
  -v             when the lock is held, say so on stderr (as below, ending
                 in "; waiting") before waiting for it

When the lock is held, or the wait runs out, one line on stderr says who
holds it (pid, host, process start, when it took the lock, mechanism), for
example:
  proclock: /tmp/backup.lock is held by pid 4242 on buildhost, process started 2026-03-01T09:00:00+01:00, acquired at 2026-03-01T09:00:01+01:00, held for 3m12s, mechanism sqlite

COMMAND gets proclock's stdin, stdout, stderr and environment. It does not
inherit the lock: a process COMMAND leaves behind does not hold it.
SIGINT, SIGTERM and SIGHUP sent to proclock are passed on to COMMAND, and
proclock waits for it to exit. A Ctrl-C at the terminal reaches COMMAND
directly (they share a process group), so proclock does not send it a
second SIGINT while they are the terminal's foreground job.

COMMAND must not outlive the lock. If proclock itself is killed:
  linux, freebsd  COMMAND gets SIGKILL (the parent-death signal)
                  (COMMAND's own children are not tied to proclock)
  windows         COMMAND and the processes it starts run in a job object
                  that is closed, killing them, when proclock exits
  darwin, other   there is no parent-death signal: COMMAND keeps running
                  without the lock. Stop proclock with SIGTERM, not SIGKILL.

Exit status: COMMAND's; 1 (or CODE) when the lock is held or the wait runs
out; 2 for bad usage and errors; 126 when COMMAND cannot be started; 127
when COMMAND is not found; 128+N when signal N stops proclock while it
waits for the lock.

Examples:
  # Run the backup unless one is running; wait for it if it is.
  proclock run /var/lock/backup.lock -- /usr/local/bin/backup --full

  # From cron: skip this run quietly when the last one is still going.
  proclock run -n -E 0 /var/lock/backup.lock -- /usr/local/bin/backup 2>/dev/null

  # Wait at most 30 seconds; exit 75 (EX_TEMPFAIL) if still held.
  proclock run -w 30s -E 75 /var/lock/deploy.lock -- make deploy

  # A shell pipeline as COMMAND.
  proclock run /tmp/agent.lock -- sh -c 'git pull && make test'
`

// runOptions are the parsed arguments of proclock run.
type runOptions struct {
	noWait    bool
	timeout   time.Duration // 0: wait as long as it takes
	verbose   bool
	heldCode  int
	remove    bool
	mechanism string
	path      string
	command   []string
}

// parseRunArgs reads proclock run's flags and operands. It returns
// flag.ErrHelp when help was asked for.
func parseRunArgs(args []string) (runOptions, error) {
	o := runOptions{heldCode: exitHeld, mechanism: "auto"}
	fs := flag.NewFlagSet("run", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.BoolVar(&o.noWait, "n", false, "")
	fs.BoolVar(&o.remove, "remove", false, "")
	fs.BoolVar(&o.verbose, "v", false, "")
	waitSet := false
	fs.Func("w", "", func(s string) error {
		d, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("not a duration (try 200ms, 30s, 5m)")
		}
		if d < 0 {
			return errors.New("negative duration")
		}
		o.timeout, waitSet = d, true
		return nil
	})
	fs.Func("E", "", func(s string) error {
		n, err := strconv.Atoi(s)
		if err != nil || n < 0 || n > 255 {
			return errors.New("not an exit code from 0 to 255")
		}
		o.heldCode = n
		return nil
	})
	mechanismFlag(fs, &o.mechanism)
	if err := parseFlags(fs, "run", args); err != nil {
		return o, err
	}
	if o.noWait && waitSet {
		return o, usagef("run", "-n and -w exclude each other")
	}
	if waitSet && o.timeout == 0 {
		o.noWait = true // as flock(1): no time to wait is not waiting
	}
	rest := fs.Args()
	switch {
	case len(rest) == 0:
		return o, usagef("run", "missing PATH")
	case rest[0] == "":
		return o, usagef("run", "empty PATH")
	case len(rest) == 1:
		return o, usagef("run", "missing -- COMMAND after PATH")
	case rest[1] != "--" && len(rest[1]) > 1 && rest[1][0] == '-':
		return o, usagef("run", "flag %s after PATH: flags go before PATH", rest[1])
	case rest[1] != "--":
		return o, usagef("run", "expected -- between PATH and COMMAND, got %q", rest[1])
	case len(rest) == 2:
		return o, usagef("run", "missing COMMAND after --")
	}
	o.path, o.command = rest[0], rest[2:]
	return o, nil
}

// knownMechanism reports whether s is a --mechanism value.
func knownMechanism(s string) bool {
	return s == "auto" || s == "sqlite" || s == "file"
}

// mechanismFlag defines --mechanism on fs, stored in dst.
func mechanismFlag(fs *flag.FlagSet, dst *string) {
	fs.Func("mechanism", "", func(s string) error {
		if !knownMechanism(s) {
			return errors.New("want auto, sqlite or file")
		}
		*dst = s
		return nil
	})
}

// parseFlags parses args into fs; a bad flag is a usage error of sub, and
// -h is flag.ErrHelp.
func parseFlags(fs *flag.FlagSet, sub string, args []string) error {
	err := fs.Parse(args)
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return err
	}
	return usagef(sub, "%v", err)
}

// runMain is proclock run: it holds the lock while COMMAND runs.
func runMain(args []string, std streams) int {
	o, err := parseRunArgs(args)
	if errors.Is(err, flag.ErrHelp) {
		fmt.Fprint(std.out, runUsage)
		return exitOK
	}
	if err != nil {
		complain(std.err, err)
		return exitUsage
	}
	if !canStartProcesses {
		complain(std.err, fmt.Errorf("proclock run: starting a command is not possible on %s", runtime.GOOS))
		return exitUsage
	}
	// Look COMMAND up before taking the lock: a typo should not wait for
	// the holder, nor take the lock from the next caller.
	if _, err := exec.LookPath(o.command[0]); err != nil {
		return cannotStart(std.err, o.command[0], err)
	}
	p, err := platformFor(o.mechanism)
	if err != nil {
		complain(std.err, err)
		return exitUsage
	}
	cmd := exec.Command(o.command[0], o.command[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = std.in, std.out, std.err

	// Catch the signals before the lock is taken, so that none of them
	// kills proclock between taking the lock and starting COMMAND.
	sigs := make(chan os.Signal, 8)
	catch(sigs)
	defer signal.Stop(sigs)

	lock, sig, err := acquire(p, o, sigs, std.err)
	switch {
	case sig != nil:
		return signalCode(sig)
	case errors.Is(err, proclock.ErrHeld) || errors.Is(err, context.DeadlineExceeded):
		explainHeld(std.err, p, o, err, "")
		return o.heldCode
	case err != nil:
		complain(std.err, err)
		return exitUsage
	}
	code := supervise(cmd, sigs, std.err)
	if err := lock.Release(); err != nil {
		// COMMAND's status says how the work went; a failed clean-up is
		// told, not folded into it.
		complain(std.err, fmt.Errorf("releasing the lock: %w", err))
	}
	return code
}

// catch sends the relayed signals to sigs, except those proclock was
// started ignoring (nohup, a script's background job): catching one would
// stop ignoring it, for COMMAND too.
func catch(sigs chan<- os.Signal) {
	for _, sig := range relayed {
		if !signal.Ignored(sig) {
			signal.Notify(sigs, sig)
		}
	}
}

// platformFor is the native platform with the mechanism asked for.
func platformFor(mechanism string) (*platform.Platform, error) {
	p := platform.Native()
	switch mechanism {
	case "file":
		p.SQLite = nil
	case "sqlite":
		if p.SQLite == nil {
			return nil, fmt.Errorf("proclock: the sqlite mechanism is not available on %s; use --mechanism file", runtime.GOOS)
		}
	}
	return p, nil
}

// acquire takes the lock as o says. A signal that arrives first ends the
// wait: acquire then returns it, holding nothing.
func acquire(p *platform.Platform, o runOptions, sigs <-chan os.Signal, stderr io.Writer) (*proclock.Lock, os.Signal, error) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if o.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, o.timeout)
		defer cancel()
	}
	type result struct {
		lock *proclock.Lock
		err  error
	}
	done := make(chan result, 1)
	go func() {
		l, err := take(ctx, p, o, stderr)
		done <- result{l, err}
	}()
	select {
	case r := <-done:
		return r.lock, nil, r.err
	case sig := <-sigs:
		cancel()
		if r := <-done; r.lock != nil {
			r.lock.Release()
		}
		return nil, sig, nil
	}
}

// take takes the lock. With -v it first tries once, to say who it waits
// for before it waits.
func take(ctx context.Context, p *platform.Platform, o runOptions, stderr io.Writer) (*proclock.Lock, error) {
	opts := proclock.Options{Wait: !o.noWait, RemoveOnRelease: o.remove}
	if !o.verbose || o.noWait {
		return proclock.Acquire(ctx, p, o.path, opts)
	}
	l, err := proclock.Acquire(ctx, p, o.path, proclock.Options{RemoveOnRelease: o.remove})
	if !errors.Is(err, proclock.ErrHeld) {
		return l, err
	}
	explainHeld(stderr, p, o, err, "; waiting")
	return proclock.Acquire(ctx, p, o.path, opts)
}

// explainHeld prints, in one line, that the lock is held and by whom, and
// then what proclock does about it. The held error names the holder;
// Inspect adds since when and the mechanism.
func explainHeld(w io.Writer, p *platform.Platform, o runOptions, err error, then string) {
	st := proclock.Status{Path: o.path, State: proclock.StateHeld, Mechanism: mechanismOf(p)}
	if held, ok := errors.AsType[*proclock.HeldError](err); ok {
		st.Holder, st.Reason = held.Holder, held.Reason
	}
	if now, ierr := proclock.Inspect(context.Background(), p, o.path); ierr == nil && now.State == proclock.StateHeld && now.Holder != nil {
		st = now
	}
	prefix := "proclock: "
	if errors.Is(err, context.DeadlineExceeded) {
		prefix += fmt.Sprintf("gave up after %v: ", o.timeout)
	}
	fmt.Fprintf(w, "%s%s is held by %s%s\n", prefix, st.Path, joinFacts(holderFacts(st)), then)
}

// mechanismOf names the mechanism Acquire uses on p.
func mechanismOf(p *platform.Platform) proclock.Mechanism {
	if p.SQLite != nil {
		return proclock.MechanismSQLite
	}
	return proclock.MechanismFile
}

// supervise starts COMMAND, passes signals on to it until it exits, and
// returns the exit code for its end.
func supervise(cmd *exec.Cmd, sigs <-chan os.Signal, stderr io.Writer) int {
	exited, err := startTied(cmd, stderr)
	if err != nil {
		return cannotStart(stderr, cmd.Args[0], err)
	}
	for {
		select {
		case sig := <-sigs:
			// An error means COMMAND has just exited: its status follows.
			_ = relay(cmd.Process, sig)
		case err := <-exited:
			return exitCodeOf(cmd, err, stderr)
		}
	}
}

// waitInBackground waits for a started cmd on a goroutine; the channel
// gets Wait's error.
func waitInBackground(cmd *exec.Cmd) <-chan error {
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	return exited
}

// exitCodeOf turns how COMMAND ended into proclock's exit code.
func exitCodeOf(cmd *exec.Cmd, err error, stderr io.Writer) int {
	if cmd.ProcessState != nil {
		return exitStatusOf(cmd.ProcessState)
	}
	if err != nil {
		complain(stderr, err)
	}
	return exitUsage
}

// cannotStart reports that COMMAND could not be started, with the shell's
// exit codes: 127 when it is not found, 126 when it cannot be run.
func cannotStart(w io.Writer, name string, err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		fmt.Fprintf(w, "proclock: %s: command not found\n", name)
		return exitNotFound
	}
	if errors.Is(err, exec.ErrDot) {
		// As os/exec does, refuse a program that PATH finds only in the
		// current directory: write ./NAME to mean it.
		fmt.Fprintf(w, "proclock: %s: found only in the current directory; run it as %s\n", name, "."+string(filepath.Separator)+name)
		return exitNoExec
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	} else if ee, ok := errors.AsType[*exec.Error](err); ok {
		err = ee.Err
	}
	fmt.Fprintf(w, "proclock: %s: cannot run: %v\n", name, err)
	return exitNoExec
}

// signalCode is the exit code for a signal, as shells give it: 128+N.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + 2 // os.Interrupt where it is not a syscall.Signal
}
