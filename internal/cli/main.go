// Package cli is the proclock command line: "proclock run" and "proclock
// status", their options, signals and exit codes. cmd/proclock is its
// program; the package doc there (go doc cmd/proclock) describes the
// command as its users see it, and docs/command.md in full.
package cli

import (
	"fmt"
	"io"
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
	// backends are the kinds of lock beside the host's that Main was
	// given (backend.go).
	backends []Backend
}

// Main runs the proclock command line on args (without the program name),
// with the given standard streams, and returns the exit code. *os.File
// streams pass straight through to COMMAND. A lock name that one of
// backends claims is taken through it (cluster/cmd/proclock passes etcd's);
// any other is a PATH on this host.
func Main(args []string, stdin io.Reader, stdout, stderr io.Writer, backends ...Backend) int {
	if guardHasIt && len(args) > 0 && args[0] == guardArg {
		// proclock run's guard of COMMAND (guard_linux.go): before
		// anything else, and with none of the command line's work.
		return guardMain(args[1:])
	}
	return cli(args, streams{in: stdin, out: stdout, err: stderr, backends: backends})
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
	case "completion":
		return completionMain(args[1:], std)
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
		fmt.Fprint(std.out, runHelp(std.backends))
	case args[0] == "status":
		fmt.Fprint(std.out, statusHelp(std.backends))
	case args[0] == "--man":
		fmt.Fprint(std.out, manPage(std.backends))
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
	msg := printable(strings.ReplaceAll(err.Error(), "\n", " "))
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
  proclock help [run|status|--man]
  proclock completion bash|zsh|fish

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

Run "proclock help run" or "proclock help status" for details; "proclock
help --man" prints all of it as a man page, proclock(1). "proclock
completion SHELL" prints the completion script of bash, zsh or fish.
`
