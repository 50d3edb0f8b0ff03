package cli

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestFlockForms drives the command with each of flock(1)'s habits that
// docs/command.md lists, on a free lock and on a held one, and checks the
// documented behaviour or the documented refusal.
func TestFlockForms(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	held := filepath.Join(dir, "held.lock")
	holder := holdLock(t, "run", held)
	holderPID := "pid " + strconv.Itoa(holder.cmd.Process.Pid) + " "
	_, noShell := exec.LookPath(shell)
	ran := helper("echo", "ran")

	for _, tc := range []struct {
		name   string
		args   []string // PATH is "HELD" or "FREE"
		code   int
		stdout string   // "" for none
		stderr []string // what stderr says, in order
		silent bool     // stderr says nothing at all
		shell  bool     // COMMAND goes through the shell
		unix   bool     // a #! script, a directory as POSIX systems refuse it
	}{
		{name: "-w seconds, free", args: line("run", "-w", "5", "FREE", ran), stdout: "ran"},
		{name: "-w fraction, held", args: line("run", "-w", "0.2", "HELD", ran), code: 1,
			stderr: []string{"gave up after 200ms", holderPID}},
		{name: "-w attached", args: line("run", "-w0.2", "HELD", ran), code: 1, stderr: []string{"gave up after 200ms"}},
		{name: "-w duration", args: line("run", "-w", "200ms", "HELD", ran), code: 1, stderr: []string{"gave up after 200ms"}},
		{name: "--wait", args: line("run", "--wait", "0.2", "HELD", ran), code: 1, stderr: []string{"gave up after 200ms"}},
		{name: "--timeout=", args: line("run", "--timeout=0.2", "HELD", ran), code: 1, stderr: []string{"gave up after 200ms"}},
		{name: "-w 0 is -n", args: line("run", "-w", "0", "HELD", ran), code: 1, stderr: []string{holderPID}},
		{name: "--nonblock", args: line("run", "--nonblock", "HELD", ran), code: 1, stderr: []string{holderPID}},
		{name: "--nb", args: line("run", "--nb", "HELD", ran), code: 1, stderr: []string{holderPID}},
		{name: "--nb, free", args: line("run", "--nb", "FREE", ran), stdout: "ran"},
		{name: "--conflict-exit-code", args: line("run", "-n", "--conflict-exit-code", "75", "HELD", ran), code: 75},
		{name: "--conflict-exit-code=", args: line("run", "-n", "--conflict-exit-code=0", "HELD", ran), code: 0},
		{name: "bundled -nE75", args: line("run", "-nE75", "HELD", ran), code: 75},
		{name: "bundled -nv, held", args: line("run", "-nv", "HELD", ran), code: 1, stderr: []string{holderPID}},
		{name: "--verbose, free", args: line("run", "--verbose", "FREE", ran), stdout: "ran",
			stderr: []string{"proclock: took ", " after "}},
		{name: "--verbose waits, held", args: line("run", "--verbose", "-w", "0.2", "HELD", ran), code: 1,
			stderr: []string{holderPID, "; waiting", "gave up after 200ms"}},
		{name: "-q, held", args: line("run", "-nq", "HELD", ran), code: 1, silent: true},
		{name: "--quiet, wait runs out", args: line("run", "--quiet", "-w", "0.2", "HELD", ran), code: 1, silent: true},
		{name: "-q -E 0, held", args: line("run", "-q", "-n", "-E", "0", "HELD", ran), code: 0, silent: true},
		{name: "-q keeps COMMAND's stderr", args: line("run", "-nq", "FREE", helper("warn", "the job's own error")),
			stderr: []string{"the job's own error"}},
		{name: "-q and -v", args: line("run", "-qv", "FREE", ran), code: 2, stderr: []string{"-q and -v exclude each other"}},
		{name: "-x", args: line("run", "-x", "FREE", ran), stdout: "ran"},
		{name: "-e", args: line("run", "-e", "FREE", ran), stdout: "ran"},
		{name: "--exclusive", args: line("run", "--exclusive", "FREE", ran), stdout: "ran"},
		{name: "bundled -xn, held", args: line("run", "-xn", "HELD", ran), code: 1},
		{name: "-o", args: line("run", "-o", "FREE", ran), stdout: "ran"},
		{name: "-c before PATH", args: []string{"run", "-c", "echo $((40+2))", "FREE"}, stdout: "42", shell: true},
		{name: "-c after PATH", args: []string{"run", "FREE", "-c", "echo $((40+2))"}, stdout: "42", shell: true},
		{name: "--command", args: []string{"run", "--command=echo ran", "FREE"}, stdout: "ran", shell: true},
		{name: "-c exit status", args: []string{"run", "FREE", "-c", "exit 7"}, code: 7, shell: true},
		{name: "-c, held", args: []string{"run", "-n", "HELD", "-c", "echo ran"}, code: 1, shell: true},
		{name: "-c and COMMAND", args: line("run", "-c", "true", "FREE", ran), code: 2, stderr: []string{"-c gives COMMAND"}},
		{name: "-c after PATH, two arguments", args: []string{"run", "FREE", "-c", "echo", "x"}, code: 2,
			stderr: []string{"exactly one argument"}},
		{name: "--allow-network-fs", args: line("run", "--allow-network-fs", "FREE", ran), stdout: "ran"},
		{name: "-V", args: []string{"-V"}, stdout: "proclock "},
		{name: "run -V", args: []string{"run", "-V"}, stdout: "proclock "},
		{name: "run --version", args: []string{"run", "--version"}, stdout: "proclock "},
		{name: "status -V", args: []string{"status", "-V"}, stdout: "proclock "},
		{name: "-s", args: line("run", "-s", "FREE", ran), code: 2, stderr: []string{"-s: shared locks are not supported"}},
		{name: "--shared", args: line("run", "--shared", "FREE", ran), code: 2,
			stderr: []string{"--shared: shared locks are not supported"}},
		{name: "bundled -ns", args: line("run", "-ns", "FREE", ran), code: 2, stderr: []string{"shared locks are not supported"}},
		{name: "descriptor", args: []string{"run", "9"}, code: 2, stderr: []string{`"flock 9" form) is not supported`}},
		{name: "-u", args: line("run", "-u", "FREE", ran), code: 2, stderr: []string{"-u: not supported"}},
		{name: "-F", args: line("run", "-F", "FREE", ran), code: 2, stderr: []string{"-F: not supported"}},
		{name: "one dash long", args: line("run", "-remove", "FREE", ran), code: 2,
			stderr: []string{"two dashes: --remove"}},
		// The forms docs/command.md, "Refused forms", lists beside these.
		{name: "a directory", unix: true, args: line("run", "-n", "DIR", ran), code: 2,
			stderr: []string{"is a directory (flock(1) locks a directory itself"}},
		{name: "the script itself", unix: true, args: []string{"run", "-n", "SCRIPT", "--", "SCRIPT"}, code: 2,
			stderr: []string{"not a lock file", "it is COMMAND's own script", `proclock run -n "$0.lock" -- "$0"`}},
		{name: "the script itself, shell", unix: true, args: []string{"run", "-n", "SCRIPT", "-c", "SCRIPT"}, code: 2, shell: true,
			stderr: []string{"it is COMMAND's own script"}},
		{name: "the script itself, no --", unix: true, args: []string{"run", "-n", "SCRIPT", "SCRIPT"}, code: 2,
			stderr: []string{"is COMMAND's own script, and -- is missing", `proclock run -n "$0.lock" -- "$0"`}},
		{name: "flock FILE COMMAND, no --", args: []string{"run", "-n", "FREE", "echo", "ran"}, code: 2,
			stderr: []string{`expected -- between PATH and COMMAND, got "echo"`}},
		{name: "-w not a number", args: line("run", "-w", "1e3", "FREE", ran), code: 2, stderr: []string{"-w 1e3: not seconds"}},
		{name: "-w missing", args: []string{"run", "-w"}, code: 2, stderr: []string{"-w needs a value"}},
		{name: "--nb=x", args: line("run", "--nb=x", "FREE", ran), code: 2, stderr: []string{"--nb takes no value"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.shell && noShell != nil {
				t.Skipf("no %s here for -c", shell)
			}
			if tc.unix && runtime.GOOS == "windows" {
				t.Skip("a #! script and a directory's refusal are POSIX systems'")
			}
			own := t.TempDir()
			free := filepath.Join(own, "free.lock")
			script := filepath.Join(own, "job.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			args := slices.Clone(tc.args)
			for i, a := range args {
				args[i] = map[string]string{"HELD": held, "FREE": free, "DIR": own, "SCRIPT": script}[a]
				if args[i] == "" {
					args[i] = a
				}
			}
			res := runProclock(t, args...)
			if res.code != tc.code {
				t.Errorf("exit %d, want %d; stderr: %s", res.code, tc.code, res.stderr)
			}
			if tc.stdout == "" && res.stdout != "" || !strings.HasPrefix(res.stdout, tc.stdout) {
				t.Errorf("stdout %q, want it to start with %q", res.stdout, tc.stdout)
			}
			if tc.silent && res.stderr != "" {
				t.Errorf("stderr %q, want nothing", res.stderr)
			}
			rest := res.stderr
			for _, want := range tc.stderr {
				_, after, found := strings.Cut(rest, want)
				if !found {
					t.Errorf("stderr %q: no %q (in order)", res.stderr, want)
					break
				}
				rest = after
			}
			if tc.code == 2 {
				oneLine(t, "stderr", res.stderr)
			}
		})
	}
	holder.release()
}

// TestParseWait: -w's value as seconds or a Go duration.
func TestParseWait(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Duration
		bad  bool
	}{
		{in: "5", want: 5 * time.Second},
		{in: "0.5", want: 500 * time.Millisecond},
		{in: ".25", want: 250 * time.Millisecond},
		{in: "3.", want: 3 * time.Second},
		{in: "0", want: 0},
		{in: "1m30s", want: 90 * time.Second},
		{in: "200ms", want: 200 * time.Millisecond},
		{in: "0.000000001", want: time.Nanosecond},
		{in: "-1", bad: true},
		{in: "-1s", bad: true},
		{in: "1e3", bad: true},
		{in: "inf", bad: true},
		{in: "0x10", bad: true},
		{in: ".", bad: true},
		{in: "1.2.3", bad: true},
		{in: "", bad: true},
		{in: "99999999999", bad: true},
	} {
		got, err := parseWait(tc.in)
		if (err != nil) != tc.bad || !tc.bad && got != tc.want {
			t.Errorf("parseWait(%q) = %v, %v; want %v, error %v", tc.in, got, err, tc.want, tc.bad)
		}
	}
}

// TestParseOptions: bundles, attached and separate values, "--" and the
// first operand end the options.
func TestParseOptions(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want string // the options seen, then "|" and the operands
		err  string
	}{
		{args: []string{"-ab", "x"}, want: "a b | x"},
		{args: []string{"-avV", "x"}, want: "a v=V | x"},
		{args: []string{"-av", "V", "x"}, want: "a v=V | x"},
		{args: []string{"--long", "--val=1", "--val", "2", "x", "-a"}, want: "long v=1 v=2 | x -a"},
		{args: []string{"-a", "--", "-b"}, want: "a | -b"},
		{args: []string{"-", "-a"}, want: " | - -a"},
		{args: []string{"-a"}, want: "a | "},
		{args: []string{"--val="}, want: "v= | "},
		{args: []string{"-q"}, err: "unknown option -q"},
		{args: []string{"-aq"}, err: "unknown option -q in -aq"},
		{args: []string{"--nope"}, err: "unknown option --nope"},
		{args: []string{"--long=1"}, err: "--long takes no value"},
		{args: []string{"--val"}, err: "--val needs a value (N)"},
		{args: []string{"-v"}, err: "-v needs a value (N)"},
		{args: []string{"-h", "-q"}, err: "help requested"},
	} {
		var seen []string
		opts := append([]option{
			{names: []string{"-a"}, set: func(string) error { seen = append(seen, "a"); return nil }},
			{names: []string{"-b"}, set: func(string) error { seen = append(seen, "b"); return nil }},
			{names: []string{"--long"}, set: func(string) error { seen = append(seen, "long"); return nil }},
			{names: []string{"-v", "--val"}, value: "N", set: func(s string) error { seen = append(seen, "v="+s); return nil }},
		}, helpOptions...)
		rest, err := parseOptions("test", opts, tc.args)
		got := strings.Join(seen, " ") + " | " + strings.Join(rest, " ")
		switch {
		case tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)):
			t.Errorf("%q: error %v, want one saying %q", tc.args, err, tc.err)
		case tc.err == "" && err != nil:
			t.Errorf("%q: %v", tc.args, err)
		case tc.err == "" && got != tc.want:
			t.Errorf("%q: got %q, want %q", tc.args, got, tc.want)
		}
		if errors.Is(err, errHelp) && len(seen) != 0 {
			t.Errorf("%q: options after -h were applied", tc.args)
		}
	}
}

// TestHelpNamesEveryOption: each option the parsers know is in its
// subcommand's help.
func TestHelpNamesEveryOption(t *testing.T) {
	var o runOptions
	var waitSet bool
	var script *string
	var st statusOptions
	for help, opts := range map[string][]option{
		runUsage:    append(runOptionTable(&o, &waitSet, &script), graceOption(new(runExtra))),
		statusUsage: {mechanismOption(&st.mechanism), {names: []string{"--json"}}},
	} {
		for _, opt := range append(opts, helpOptions...) {
			for _, name := range opt.names {
				if !strings.Contains(help, name) {
					t.Errorf("help %.40q... does not name %s", help, name)
				}
			}
		}
	}
}
