package cli

import (
	"errors"
	"io"
	"io/fs"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"
)

const runUsage = `Usage: proclock run [OPTIONS] PATH -- COMMAND [ARGS...]
       proclock run [OPTIONS] PATH -c 'SHELL COMMAND'

Takes the lock at PATH, runs COMMAND while holding it, then releases the lock
and exits with COMMAND's exit status (128+N when signal N killed it). Like
flock(1) it waits for the lock by default.

Options (short ones bundle: -nv; values attached or apart: -w5, -w 5):
  -n, --nonblock, --nonblocking, --nb
                          do not wait: fail at once if the lock is held
  -w, --wait, --timeout T give up waiting after T: seconds as flock(1)
                          takes them (5, 0.5) or a duration (200ms, 5m);
                          0 is -n
  -E, --conflict-exit-code CODE
                          exit with CODE (0-255) instead of 1 when the lock
                          is held or the wait runs out
  -c, --command 'CMD'     run CMD with $SHELL -c (/bin/sh when SHELL is
                          unset) instead of -- COMMAND (before PATH, or
                          after it as flock(1) has it)
  -q, --quiet             say nothing when the lock is held or the wait
                          runs out, as flock(1) does; errors, and
                          COMMAND's own stderr, still show
  -v, --verbose           say who holds the lock before waiting for it,
                          and how long taking it took; when it cannot be
                          taken, the cause in full on a second line (the
                          system's and SQLite's own words)
  --remove                remove the lock's files on release (the sqlite
                          mechanism leaves an empty database file
                          otherwise; the file mechanism always removes its
                          lock file)
  --mechanism M           auto (the default: sqlite where this system has
                          it, else file), sqlite, or file. Users of one
                          PATH may use either: they keep each other out.
  --allow-network-fs      lock on a network filesystem (NFS, SMB ...),
                          which proclock refuses otherwise: its locks and
                          process checks cannot be trusted there
  --grace DURATION        when the lock is lost while COMMAND runs, the
                          time between SIGTERM and SIGKILL to COMMAND's
                          process group (below); default 2s on a host
                          lock, a fifth of the TTL on a cluster lock;
                          0: SIGKILL at once
  -x, -e, --exclusive     accepted for flock(1)'s sake: the lock is always
                          exclusive
  -o, --close             COMMAND does not inherit the lock's descriptor
                          (linux): a process that escapes the guard of a
                          killed proclock then keeps no lock (below)
  -V, --version           print the version
  -h, --help              print this help
Refused, with the reason: -s/--shared (one holder at a time, the one
status names), -u/--unlock and -F/--no-fork (proclock must stay to release
the lock), and flock's descriptor form "flock 9" (the lock lives as long as
proclock).

When the lock is held, or the wait runs out, one line on stderr says who
holds it (pid, host, process start, when it took the lock, mechanism), for
example:
  proclock: /run/backup/backup.lock is held by pid 4242 on buildhost, process started 2026-03-01T09:00:00+01:00, acquired at 2026-03-01T09:00:01+01:00, held for 3m12s, mechanism sqlite
flock(1) says nothing; proclock says this unless -q: cron mails a job's
output, not its exit status, and a holder that hangs would otherwise keep
every later run from starting without anyone being told.

Where to put PATH: in a directory only its users can write, such as
$XDG_RUNTIME_DIR for your own jobs or /run/SERVICE (owned by the service's
user) for a system service; not /tmp, where anyone can take the name first
(docs/security.md).

COMMAND gets proclock's stdin, stdout, stderr and environment. The lock
lives as long as the job (linux): proclock holds it, and waits, until
COMMAND and every process COMMAND leaves behind (a background child, a
daemon that forks and calls setsid) have exited, then exits with COMMAND's
status. COMMAND's processes inherit the lock's file as descriptor 3 with
its kernel locks, as under flock(1) (-o: they do not). Elsewhere the lock
lives as long as proclock.

PROCLOCK_LAUNCHER_PID=PID in proclock's environment (a positive number)
is recorded with the holder as the pid of whatever launched it, a
scheduler or a wrapper script, for people to read: status prints
"launched by pid PID". It plays no part in judging the holder.

Signals: each signal reaches COMMAND once. COMMAND runs in a process group
of its own. Sent to proclock, or to proclock's process group (kill --
-PGID, timeout(1)), these are passed on to COMMAND's group, and proclock
waits for it to exit:
  passed on: SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH
(so ExecReload=kill -USR1 $MAINPID reaches COMMAND). While proclock waits
for the lock, the first four end the wait (128+N) and the other three
change nothing. Windows passes none on (below). When proclock is a job
of its own in the terminal's foreground, COMMAND's group gets the terminal
as a shell gives it to a job: Ctrl-C, Ctrl-\ and Ctrl-Z reach COMMAND
directly, and Ctrl-Z stops proclock with it, so that fg and bg work. Run
from a script, proclock stays in the script's group: the terminal's signals
reach the script and proclock, which passes them on. A COMMAND killed by
SIGINT makes proclock die of SIGINT too, so that a calling shell stops.
Under systemd, use KillMode=mixed: control-group also signals COMMAND
directly, and COMMAND would get SIGTERM twice. On windows a console's
Ctrl-C reaches COMMAND directly; proclock waits for it.

COMMAND must not outlive the lock. If proclock itself is killed (SIGKILL,
the OOM killer):
  linux           COMMAND's guard, a proclock of its own in a session of
                  its own, kills COMMAND's whole process group at once,
                  background children included, host and cluster locks
                  alike; COMMAND also gets SIGKILL as its parent-death
                  signal. A process that left the group (setsid, a
                  daemon) is not reached: it runs on, and keeps a host
                  lock from other native proclocks while it keeps
                  descriptor 3, but not from a wasm guest, nor a cluster
                  lock once its TTL runs out. A killed guard is told
                  ("warning: COMMAND's guard ended").
  freebsd         COMMAND gets SIGKILL (the parent-death signal); what it
                  started runs on without the lock
  windows         COMMAND and the processes it starts run in a job object
                  that is closed, killing them, when proclock exits
  darwin, other   there is no parent-death signal: COMMAND keeps running
                  without the lock. Stop proclock with SIGTERM, not SIGKILL.
A proclock stopped by itself (SIGSTOP to proclock, not COMMAND) cannot
stop COMMAND until it is continued: a cluster lock whose TTL runs out
meanwhile passes on while COMMAND runs. Stop the whole group (kill -STOP
-PGID, Ctrl-Z), or run proclock under a supervisor that does not stop
proclock alone.

When the lock is lost while COMMAND runs (a host lock's file removed or
replaced at PATH; a cluster lock's lease not renewed in time, revoked, or
its key deleted), proclock stops COMMAND's whole process group: SIGTERM,
then SIGKILL once the grace is over, and exits 125. A cluster lock's
SIGTERM comes the grace before its local deadline, and its SIGKILL at the
deadline, so that the group is dead before the server can expire the
lease; a proclock that wakes past its deadline (it was stopped) sends
SIGKILL at once, even if a renewal came back since. The line on stderr
says which was sent.

`

// runExamples ends run's help, after its exit codes (runExits).
const runExamples = `Examples:
  # Run the backup unless one is running; wait for it if it is.
  proclock run /run/backup/backup.lock -- /usr/local/bin/backup --full

  # From cron: skip this run quietly when the last one is still going;
  # the job's own errors still reach cron's mail (without -q, so does who
  # holds the lock, each time a run is skipped).
  proclock run -nq -E 0 /run/backup/backup.lock -- /usr/local/bin/backup

  # Wait at most 30 seconds; exit 75 (EX_TEMPFAIL) if still held.
  proclock run -w 30 -E 75 /run/deploy/deploy.lock -- make deploy

  # Your own agent, one at a time; a shell command as COMMAND.
  proclock run -nv "$XDG_RUNTIME_DIR/agent.lock" -c 'git pull && make test'
`

// runOptions are the parsed arguments of proclock run.
type runOptions struct {
	noWait         bool
	timeout        time.Duration // 0: wait as long as it takes
	verbose        bool
	quiet          bool // no line when the lock is held or the wait runs out
	heldCode       int
	heldCodeSet    bool // -E was given
	remove         bool
	allowNetworkFS bool
	close          bool // -o: COMMAND does not inherit the lock's descriptor
	mechanism      string
	path           string
	command        []string
	// hostOnly are the options given that only a lock on this host
	// (a PATH) has: refused on a backend's name.
	hostOnly []string
}

// shellCommand is -c's COMMAND: script run by $SHELL, else the system's
// shell, as flock(1) runs it.
func shellCommand(script string) []string {
	sh := os.Getenv("SHELL")
	if sh == "" {
		sh = shell
	}
	return []string{sh, "-c", script}
}

// runOptionTable defines proclock run's options, flock(1)'s spellings
// beside proclock's own (docs/command.md, "Options").
func runOptionTable(o *runOptions, waitSet *bool, script **string) []option {
	return append([]option{
		{names: []string{"-n", "--nonblock", "--nonblocking", "--nb"}, set: func(string) error {
			o.noWait = true
			return nil
		}},
		{names: []string{"-w", "--wait", "--timeout"}, value: "SECONDS or a duration", set: func(s string) error {
			d, err := parseWait(s)
			o.timeout, *waitSet = d, true
			return err
		}},
		{names: []string{"-E", "--conflict-exit-code"}, value: "CODE", set: func(s string) error {
			n, err := strconv.Atoi(s)
			if err != nil || n < 0 || n > 255 {
				return errors.New("not an exit code from 0 to 255")
			}
			o.heldCode, o.heldCodeSet = n, true
			return nil
		}},
		{names: []string{"-v", "--verbose"}, set: func(string) error {
			o.verbose = true
			return nil
		}},
		{names: []string{"-q", "--quiet"}, set: func(string) error {
			o.quiet = true
			return nil
		}},
		{names: []string{"-c", "--command"}, value: "COMMAND", set: func(s string) error {
			*script = &s
			return nil
		}},
		// Exclusive is the only kind of lock: flock's -x asks for what
		// happens anyway. -o keeps the lock's descriptor from COMMAND, as
		// flock's does (inheritLock).
		{names: []string{"-x", "-e", "--exclusive"}, set: func(string) error { return nil }},
		{names: []string{"-o", "--close"}, set: func(string) error {
			o.close = true
			return nil
		}},
		givenOption(&o.hostOnly, option{names: []string{"--remove"}, set: func(string) error {
			o.remove = true
			return nil
		}}),
		givenOption(&o.hostOnly, option{names: []string{"--allow-network-fs"}, set: func(string) error {
			o.allowNetworkFS = true
			return nil
		}}),
		givenOption(&o.hostOnly, mechanismOption(&o.mechanism)),
		refused("shared locks are not supported: a proclock lock has one holder at a time, the one it names",
			"-s", "--shared"),
		refused("not supported: the lock is released when COMMAND ends, and proclock holds no lock on a descriptor to unlock",
			"-u", "--unlock"),
		refused("not supported: proclock stays to release the lock when COMMAND ends, which an exec would not",
			"-F", "--no-fork"),
	}, helpOptions...)
}

// parseWait reads -w's value: seconds as flock(1) takes them (5, 0.5) or
// a Go duration (200ms, 1m30s).
func parseWait(s string) (time.Duration, error) {
	if isDecimal(s) {
		secs, err := strconv.ParseFloat(s, 64)
		if err != nil || secs*float64(time.Second) > math.MaxInt64 {
			return 0, errors.New("too long")
		}
		return time.Duration(math.Round(secs * float64(time.Second))), nil
	}
	d, err := time.ParseDuration(s)
	switch {
	case err != nil:
		return 0, errors.New("not seconds or a duration (try 5, 0.5, 200ms, 5m)")
	case d < 0:
		return 0, errors.New("negative duration")
	}
	return d, nil
}

// isDecimal reports whether s is digits with at most one decimal point:
// the seconds flock(1) takes, and nothing ParseFloat alone would let in
// (1e3, inf, 0x10).
func isDecimal(s string) bool {
	digits, dots := 0, 0
	for _, c := range s {
		switch {
		case c >= '0' && c <= '9':
			digits++
		case c == '.':
			dots++
		default:
			return false
		}
	}
	return digits > 0 && dots <= 1
}

// parseRunArgsWith reads proclock run's options and operands, with
// options beyond run's own (the backends', runExtra's). It returns errHelp
// or errVersion when -h or -V asked for that instead.
func parseRunArgsWith(args []string, extra []option) (runOptions, error) {
	o := runOptions{heldCode: exitHeld, mechanism: "auto"}
	var waitSet bool
	var script *string // -c's, when given
	rest, err := parseOptions("run", append(runOptionTable(&o, &waitSet, &script), extra...), args)
	if err == nil {
		err = o.settleWait(waitSet)
	}
	if err == nil {
		rest, err = withScript(rest, script)
	}
	if err == nil {
		err = judgeOperands(rest)
	}
	if err != nil {
		return o, err
	}
	o.path, o.command = rest[0], rest[2:]
	return o, nil
}

// settleWait refuses options that exclude each other and makes -w 0 -n.
func (o *runOptions) settleWait(waitSet bool) error {
	if o.noWait && waitSet {
		return usagef("run", "-n and -w exclude each other")
	}
	if o.quiet && o.verbose {
		return usagef("run", "-q and -v exclude each other")
	}
	if waitSet && o.timeout == 0 {
		o.noWait = true // as flock(1): no time to wait is not waiting
	}
	return nil
}

// withScript turns -c's shell command, given before PATH or after it,
// into the operands PATH -- $SHELL -c SCRIPT.
func withScript(rest []string, script *string) ([]string, error) {
	if len(rest) >= 2 && (rest[1] == "-c" || rest[1] == "--command") {
		// flock(1)'s own place for -c: after the file.
		if len(rest) != 3 {
			return rest, usagef("run", "%s after PATH takes exactly one argument, the shell command", rest[1])
		}
		given := rest[2]
		script, rest = &given, rest[:1]
	}
	if script == nil {
		return rest, nil
	}
	switch {
	case len(rest) == 0:
		return rest, usagef("run", "missing PATH")
	case len(rest) > 1:
		return rest, usagef("run", "-c gives COMMAND: no -- COMMAND after PATH as well")
	}
	return append(rest, append([]string{"--"}, shellCommand(*script)...)...), nil
}

// judgeOperands refuses operands other than PATH -- COMMAND [ARGS...].
func judgeOperands(rest []string) error {
	switch {
	case len(rest) == 0:
		return usagef("run", "missing PATH")
	case rest[0] == "":
		return usagef("run", "empty PATH")
	case len(rest) == 1 && isDescriptor(rest[0]):
		return usagef("run", "%s: locking a descriptor (flock's \"flock %s\" form) is not supported: "+
			"proclock's lock lives as long as proclock, which must hold it while COMMAND runs; "+
			"give PATH -- COMMAND (write ./%s for a file of that name)", rest[0], rest[0], rest[0])
	case len(rest) == 1:
		return usagef("run", "missing -- COMMAND after PATH")
	case rest[1] != "--":
		return noDashes(rest)
	case len(rest) == 2:
		return usagef("run", "missing COMMAND after --")
	}
	return nil
}

// noDashes says what is wrong with operands PATH WORD..., WORD not "--".
func noDashes(rest []string) error {
	switch {
	case len(rest[1]) > 1 && rest[1][0] == '-':
		return usagef("run", "option %s after PATH: options go before PATH", rest[1])
	case ownScriptNote(rest[0], rest[1:]) != "":
		// flock -n "$0" "$0": the cron line would never run COMMAND.
		return usagef("run", "%s is COMMAND's own script, and -- is missing before COMMAND: %s", rest[0], ownScriptFix)
	}
	return usagef("run", "expected -- between PATH and COMMAND, got %q", rest[1])
}

// isDescriptor reports whether s looks like flock(1)'s descriptor operand:
// digits only.
func isDescriptor(s string) bool {
	return s != "" && strings.Trim(s, "0123456789") == ""
}

// mechanismValues are --mechanism's values.
var mechanismValues = []string{"auto", "sqlite", "file"}

// knownMechanism reports whether s is a --mechanism value.
func knownMechanism(s string) bool {
	return slices.Contains(mechanismValues, s)
}

// mechanismOption is --mechanism, stored in dst.
func mechanismOption(dst *string) option {
	return option{names: []string{"--mechanism"}, value: "auto, sqlite or file", choices: mechanismValues, set: func(s string) error {
		if !knownMechanism(s) {
			return errors.New("want auto, sqlite or file")
		}
		*dst = s
		return nil
	}}
}

// cannotStart reports that COMMAND could not be started, with the shell's
// exit codes: 127 when it is not found, 126 when it cannot be run.
func cannotStart(w io.Writer, name string, err error) int {
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, fs.ErrNotExist) {
		fprintf(w, "proclock: %s: command not found\n", name)
		return exitNotFound
	}
	if errors.Is(err, exec.ErrDot) {
		// As os/exec does, refuse a program that PATH finds only in the
		// current directory: write ./NAME to mean it.
		fprintf(w, "proclock: %s: found only in the current directory; run it as %s\n", name, "."+string(filepath.Separator)+name)
		return exitNoExec
	}
	if pe, ok := errors.AsType[*fs.PathError](err); ok {
		err = pe.Err
	} else if ee, ok := errors.AsType[*exec.Error](err); ok {
		err = ee.Err
	}
	fprintf(w, "proclock: %s: cannot run: %v\n", name, err)
	return exitNoExec
}

// signalCode is the exit code for a signal, as shells give it: 128+N.
func signalCode(sig os.Signal) int {
	if s, ok := sig.(syscall.Signal); ok {
		return 128 + int(s)
	}
	return 128 + 2 // os.Interrupt where it is not a syscall.Signal
}
