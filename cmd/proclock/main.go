// Command proclock runs a command under a single-instance lock, and tells
// who holds a lock.
//
// Usage:
//
//	proclock run [OPTIONS] PATH -- COMMAND [ARGS...]
//	proclock run [OPTIONS] PATH -c 'SHELL COMMAND'
//	proclock status [--json] [--mechanism auto|sqlite|file] PATH
//	proclock -V | --version
//	proclock -h | --help | help [run|status|--man]
//	proclock completion bash|zsh|fish
//
// "proclock run" takes the lock at PATH (waiting for its holder by default,
// as flock(1) does), runs COMMAND while holding it, releases it and exits
// with COMMAND's status. A lock that is held, or a wait that runs out,
// prints the holder (pid, host, since when, mechanism) on stderr (nothing
// with -q/--quiet, as flock(1)) and exits 1, or the code given with -E. Its
// options are flock(1)'s where they make sense for an exclusive lock that
// names its holder: -n/--nonblock/--nb, -w/--wait/--timeout in seconds (5,
// 0.5) or as a duration (200ms), -E/--conflict-exit-code, -c/--command,
// -v/--verbose, -x/-e/--exclusive and -o/--close (what happens anyway),
// -V/--version; short options bundle (-nv). proclock's own are -q/--quiet,
// --remove, --mechanism and --allow-network-fs. -s/--shared, -u/--unlock,
// -F/--no-fork, the descriptor form ("flock 9"), a directory, and a file
// that is not a lock file (the script itself, as flock -n "$0" "$0" locks
// it) are refused with the reason and what to write instead. The options
// are described in docs/command.md, with every refused form.
//
// Each signal reaches COMMAND once: COMMAND runs in a process group of its
// own; SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 and SIGWINCH sent
// to proclock or to its process group are passed on to COMMAND's group (the
// first four end a wait for the lock; the others do not); and when proclock
// is a foreground job of its own, COMMAND's group gets the terminal, as a
// shell gives it to a job, so that the terminal's Ctrl-C reaches COMMAND
// directly and Ctrl-Z, fg and bg work (docs/command.md, "Signals").
// On linux the lock lives as long as the job: proclock waits for every
// process COMMAND leaves behind before it releases the lock, and COMMAND's
// processes inherit the lock's descriptor (-o: not). A killed proclock
// takes COMMAND's whole process group with it on linux: COMMAND's guard,
// a proclock of its own, kills the group (docs/command.md, "The lock and
// COMMAND's processes"). On freebsd COMMAND alone is killed if proclock
// dies (on windows it runs in a job object that dies with proclock;
// elsewhere there is no such tie).
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

// docs/proclock.1 is this command's man page, made from its help.
//go:generate sh -c "go run . help --man > ../../docs/proclock.1"

import (
	"os"

	"github.com/proclock/proclock/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
