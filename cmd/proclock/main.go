// Command proclock runs a command under a single-instance lock, and tells
// who holds a lock.
//
// Usage:
//
//	proclock run [OPTIONS] PATH -- COMMAND [ARGS...]
//	proclock run [OPTIONS] PATH -c 'SHELL COMMAND'
//	proclock status [--json] [--mechanism auto|sqlite|file] PATH
//	proclock -V | --version
//	proclock -h | --help | help [run|status]
//
// "proclock run" takes the lock at PATH (waiting for its holder by default,
// as flock(1) does), runs COMMAND while holding it, releases it and exits
// with COMMAND's status. A lock that is held, or a wait that runs out,
// prints the holder (pid, host, since when, mechanism) on stderr and exits
// 1, or the code given with -E. Its options are flock(1)'s where they make
// sense for an exclusive lock that names its holder: -n/--nonblock/--nb,
// -w/--wait/--timeout in seconds (5, 0.5) or as a duration (200ms),
// -E/--conflict-exit-code, -c/--command, -v/--verbose, -x/-e/--exclusive
// and -o/--close (what happens anyway), -V/--version; short options
// bundle (-nv). proclock's own are --remove, --mechanism and
// --allow-network-fs. -s/--shared, -u/--unlock, -F/--no-fork and the
// descriptor form ("flock 9") are refused with the reason. The options are
// described in docs/command.md.
//
// Each signal reaches COMMAND once: COMMAND runs in a process group of its
// own; SIGINT, SIGTERM, SIGHUP and SIGQUIT sent to proclock or to its
// process group are passed on to COMMAND's group; and when proclock is a
// foreground job of its own, COMMAND's group gets the terminal, as a shell
// gives it to a job, so that the terminal's Ctrl-C reaches COMMAND
// directly and Ctrl-Z, fg and bg work (docs/command.md, "Signals").
// COMMAND does not inherit the lock, and on linux and freebsd it is killed
// if proclock itself dies (on windows it runs in a job object that dies
// with proclock; elsewhere there is no such tie).
//
// "proclock status" prints whether the lock at PATH is free or held, and by
// whom, without taking it: exit 0 when it is free (no file, a free file, or
// a stale lock file whose holder is gone), 1 when it is held, 2 on error.
// With --json it prints one JSON object on one line, in format 1:
//
//	formatVersion   number  1; changes only if a field below is renamed,
//	                        removed or changes meaning (fields may be added)
//	path            string  PATH as given
//	state           string  "absent", "free", "held", "stale" or
//	                        "inaccessible"
//	reason          string  why stale ("pid gone", "pid reused", "other
//	                        boot", "unstamped past 30 s", "unreadable past
//	                        30 s") or inaccessible; omitted otherwise
//	holder          object  the holder's identity, omitted when unknown:
//	                        host, bootId, pid, processStart (RFC 3339;
//	                        omitted when it cannot be told: another host or
//	                        boot, or an OS that records none), startTime
//	                        (raw, in the recording OS's units), pidNamespace,
//	                        launcherPid (all but host and pid omitted when
//	                        unknown)
//	acquiredAt      string  RFC 3339 time the holder took the lock; omitted
//	                        when unknown
//	heldForSeconds  number  seconds since acquiredAt while held; omitted
//	                        otherwise
//	mechanism       string  "sqlite" or "file"
//
// Times are in UTC. testdata/status holds the object for each state.
//
// Exit codes: COMMAND's status (128+N when signal N killed it); 1 (or -E's
// CODE) when the lock is held or a wait ran out; 2 for bad usage and
// errors; 126 when COMMAND cannot be started and 127 when it is not found,
// as shells do.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"strings"
)

// version is this command's version when the build records none.
const version = "0.1.0-dev"

// Exit codes shared by the subcommands.
const (
	exitOK       = 0
	exitHeld     = 1
	exitUsage    = 2
	exitNoExec   = 126
	exitNotFound = 127
)

// streams are the standard streams a subcommand reads and writes. COMMAND
// gets them as they are: *os.File values pass straight through to it.
type streams struct {
	in       io.Reader
	out, err io.Writer
}

func main() {
	os.Exit(cli(os.Args[1:], streams{in: os.Stdin, out: os.Stdout, err: os.Stderr}))
}

// cli runs the proclock command line on args (without the program name)
// and returns the exit code.
func cli(args []string, std streams) int {
	if len(args) == 0 {
		fmt.Fprint(std.err, "proclock: missing subcommand (run or status); see proclock -h\n")
		return exitUsage
	}
	switch args[0] {
	case "run":
		return runMain(args[1:], std)
	case "status":
		return statusMain(args[1:], std)
	case "-h", "-help", "--help", "help":
		return helpMain(args[1:], std)
	case "-V", "-version", "--version", "version":
		return printVersion(std.out)
	}
	fmt.Fprintf(std.err, "proclock: unknown subcommand %q; see proclock -h\n", args[0])
	return exitUsage
}

// helpMain prints the help asked for: the overview, or a subcommand's.
func helpMain(args []string, std streams) int {
	switch {
	case len(args) == 0:
		fmt.Fprint(std.out, usageText)
	case args[0] == "run":
		fmt.Fprint(std.out, runUsage)
	case args[0] == "status":
		fmt.Fprint(std.out, statusUsage)
	default:
		fmt.Fprintf(std.err, "proclock: no help for %q; see proclock -h\n", args[0])
		return exitUsage
	}
	return exitOK
}

// printVersion prints the version line.
func printVersion(w io.Writer) int {
	fmt.Fprintf(w, "proclock %s\n", buildVersion())
	return exitOK
}

// buildVersion is the main module's version when the build recorded one
// (go install ...@v1.2.3, or a VCS checkout), else version.
func buildVersion() string {
	if bi, ok := debug.ReadBuildInfo(); ok && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		return bi.Main.Version
	}
	return version
}

// complain prints err on stderr as one line that starts with "proclock",
// as the library's errors and usagef's do already.
func complain(w io.Writer, err error) {
	msg := strings.ReplaceAll(err.Error(), "\n", " ")
	if !strings.HasPrefix(msg, "proclock: ") && !strings.HasPrefix(msg, "proclock run: ") && !strings.HasPrefix(msg, "proclock status: ") {
		msg = "proclock: " + msg
	}
	fmt.Fprintln(w, msg)
}

// usagef is the error for bad input on the command line of sub ("run" or
// "status"), pointing to its help.
func usagef(sub, format string, args ...any) error {
	return fmt.Errorf("proclock %s: %s (see proclock %s -h)", sub, fmt.Sprintf(format, args...), sub)
}

const usageText = `proclock runs a command under a single-instance lock, and tells who holds one.

Usage:
  proclock run [OPTIONS] PATH -- COMMAND [ARGS...]
  proclock run [OPTIONS] PATH -c 'SHELL COMMAND'
  proclock status [--json] [--mechanism auto|sqlite|file] PATH
  proclock -V | --version
  proclock help [run|status]

Keep locks where only their users can write: $XDG_RUNTIME_DIR,
/run/SERVICE; not /tmp (docs/security.md).

Examples:
  # Keep a cron job from running twice; wait for the one running now.
  proclock run /run/backup/backup.lock -- /usr/local/bin/backup --full

  # Give up at once if it is running, and say who runs it.
  proclock run -n /run/backup/backup.lock -- /usr/local/bin/backup

  # flock(1)'s way: wait up to 5 seconds, run a shell command.
  proclock run -w 5 "$XDG_RUNTIME_DIR/agent.lock" -c 'make test'

  # Who holds the lock?
  proclock status /run/backup/backup.lock
  proclock status --json /run/backup/backup.lock

Run "proclock help run" or "proclock help status" for details.
`
