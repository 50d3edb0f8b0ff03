package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/locktest"
)

// The tests run the proclock binary as a user would. The commands it runs
// are this test binary again, as a helper (see helperMain), so that every
// test controls exactly when a COMMAND starts, blocks and ends.

// helperRole is the test binary as a helper COMMAND; its first argument
// names what to do. proclock passes its environment, which names the
// role, on to COMMAND.
var helperRole = locktest.NewRole("command", helperMain)

var (
	bin        string // the proclock binary under test
	testBinary string // this test binary, re-executed as COMMAND
)

func TestMain(m *testing.M) {
	locktest.MaybePlay()
	if !canStartProcesses {
		fmt.Println("skipping: this system cannot start processes")
		os.Exit(0)
	}
	unignoreSignals()
	dir, err := os.MkdirTemp("", "proclock-cmd-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	code := buildAndRun(m, dir)
	os.RemoveAll(dir)
	os.Exit(code)
}

// binaryEnv names a proclock binary built beforehand, to test instead of
// building one: where this test runs has no go command (windows tests
// under wine, .ci/wine/test).
const binaryEnv = "PROCLOCK_TEST_BINARY"

// buildAndRun builds the command into dir once, then runs the tests.
func buildAndRun(m *testing.M, dir string) int {
	bin = filepath.Join(dir, "proclock")
	if runtime.GOOS == "windows" {
		bin += ".exe"
	}
	if prebuilt := os.Getenv(binaryEnv); prebuilt != "" {
		bin = prebuilt
	} else if out, err := exec.Command("go", "build", "-o", bin, "github.com/proclock/proclock/cmd/proclock").CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build: %v\n%s", err, out)
		return 2
	}
	testBinary = locktest.Self()
	return m.Run()
}

// helperMain is the test binary acting as a COMMAND; it returns its exit
// status.
func helperMain(args []string) int {
	switch args[0] {
	case "hold":
		// Holds the lock until the test closes stdin.
		fmt.Println("started")
		io.Copy(io.Discard, os.Stdin)
		return 0
	case "exit":
		n, _ := strconv.Atoi(args[1])
		return n
	case "echo":
		fmt.Println(strings.Join(args[1:], " "))
		return 0
	case "occupy":
		return occupy(args[1], args[2])
	}
	return helperMainOS(args)
}

// occupy is one turn of the exclusion test: it marks the lock occupied
// (a second occupant fails to create the marker), bumps a counter (two
// occupants would lose an update), and watches the counter while it stays,
// so that an intruder is seen by both sides.
func occupy(marker, counter string) int {
	f, err := os.OpenFile(marker, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Fprintln(os.Stderr, "overlap: the marker is there:", err)
		return 9
	}
	f.Close()
	n := readCount(counter)
	for range 200 {
		if readCount(counter) != n {
			fmt.Fprintln(os.Stderr, "overlap: the counter moved")
			return 9
		}
	}
	if err := os.WriteFile(counter, []byte(strconv.Itoa(n+1)), 0o644); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 9
	}
	if err := os.Remove(marker); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 9
	}
	return 0
}

// readCount reads the counter file; a missing one is 0.
func readCount(name string) int {
	b, _ := os.ReadFile(name)
	n, _ := strconv.Atoi(string(b))
	return n
}

// helper is the COMMAND part of a proclock command line: the test binary
// doing mode.
func helper(mode string, args ...string) []string {
	return append([]string{"--"}, helperRole.Argv(append([]string{mode}, args...)...)...)
}

// line builds a proclock command line.
func line(parts ...any) []string {
	var args []string
	for _, p := range parts {
		switch p := p.(type) {
		case string:
			args = append(args, p)
		case []string:
			args = append(args, p...)
		}
	}
	return args
}

// result is how one proclock invocation ended.
type result struct {
	code           int
	stdout, stderr string
}

// proclockCmd is the binary with args, helpers enabled in its
// environment and its stdin empty.
func proclockCmd(args []string) *exec.Cmd {
	cmd := exec.Command(bin, args...)
	cmd.Env = helperRole.Environ(os.Environ())
	detach(cmd)
	return cmd
}

// runProclock runs the binary to the end.
func runProclock(t *testing.T, args ...string) result {
	t.Helper()
	cmd := proclockCmd(args)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
		t.Fatalf("proclock %q: %v", args, err)
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// running is a proclock started in the background.
type running struct {
	t      *testing.T
	cmd    *exec.Cmd
	stdin  *os.File // closing it ends a "hold" COMMAND
	stdout *os.File
	lines  *bufio.Reader
	stderr *os.File

	waitOnce sync.Once
	res      result
}

// startProclock starts the binary with pipes the test controls: COMMAND
// gets them too, so a read from stdout sees what COMMAND prints.
func startProclock(t *testing.T, args ...string) *running {
	t.Helper()
	return start(t, proclockCmd(args))
}

// startShell is startProclock for a command line that starts proclock in
// its own way (args[0] is the program).
func startShell(t *testing.T, args ...string) *running {
	t.Helper()
	cmd := proclockCmd(args[1:])
	cmd.Path, cmd.Args = args[0], args
	if lp, err := exec.LookPath(args[0]); err == nil {
		cmd.Path = lp
	}
	return start(t, cmd)
}

func start(t *testing.T, cmd *exec.Cmd) *running {
	t.Helper()
	inR, inW := pipe(t)
	outR, outW := pipe(t)
	errF, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errF
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	inR.Close()
	outW.Close()
	r := &running{t: t, cmd: cmd, stdin: inW, stdout: outR, lines: bufio.NewReader(outR), stderr: errF}
	t.Cleanup(func() {
		inW.Close()
		r.cmd.Process.Kill()
		r.wait()
		outR.Close()
		errF.Close() // windows removes no open file: t.TempDir could not go
	})
	return r
}

func pipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	return r, w
}

// deadline bounds every wait on a pipe: a test that would hang fails.
const deadline = 30 * time.Second

// expectLine reads COMMAND's next line of output and checks it.
func (r *running) expectLine(want string) {
	r.t.Helper()
	r.stdout.SetReadDeadline(time.Now().Add(deadline))
	got, err := r.lines.ReadString('\n')
	if err != nil || strings.TrimSpace(got) != want {
		r.t.Fatalf("proclock %q: read %q, %v; want the line %q; stderr: %s", r.cmd.Args[1:], got, err, want, r.readStderr())
	}
}

// wait waits for the proclock to exit, once.
func (r *running) wait() result {
	r.waitOnce.Do(func() {
		r.cmd.Wait()
		r.res = result{code: r.cmd.ProcessState.ExitCode(), stderr: r.readStderr()}
	})
	return r.res
}

func (r *running) readStderr() string {
	b, _ := os.ReadFile(r.stderr.Name())
	return string(b)
}

// holdLock starts a proclock that holds the lock until the test closes its
// stdin, and returns once COMMAND runs.
func holdLock(t *testing.T, flags ...string) *running {
	t.Helper()
	r := startProclock(t, line(flags, helper("hold"))...)
	r.expectLine("started")
	return r
}

// release lets a holdLock's COMMAND end and checks that proclock exits 0.
func (r *running) release() {
	r.t.Helper()
	r.stdin.Close()
	if res := r.wait(); res.code != 0 {
		r.t.Fatalf("holder: exit %d, want 0; stderr: %s", res.code, res.stderr)
	}
}

var mechanisms = []string{"sqlite", "file"}

// skipFileOnWine skips a test of the file mechanism under wine, where it
// cannot work (locktest.WineBirthTime).
func skipFileOnWine(t *testing.T, mech string) {
	t.Helper()
	if mech == "file" {
		locktest.SkipOnWine(t, locktest.WineBirthTime)
	}
}

// oneLine checks that s is exactly one non-empty line starting with
// "proclock".
func oneLine(t *testing.T, what, s string) {
	t.Helper()
	if !strings.HasPrefix(s, "proclock") || strings.Count(s, "\n") != 1 || !strings.HasSuffix(s, "\n") {
		t.Errorf("%s = %q, want one line starting with proclock", what, s)
	}
}

// TestRunExclusive runs rounds of concurrent proclock runs on one lock;
// each COMMAND checks that it is alone (marker and counter).
func TestRunExclusive(t *testing.T) {
	const workers, rounds = 4, 5
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			skipFileOnWine(t, mech)
			t.Parallel()
			dir := t.TempDir()
			lock, marker, counter := filepath.Join(dir, "x.lock"), filepath.Join(dir, "marker"), filepath.Join(dir, "counter")
			var wg sync.WaitGroup
			for w := range workers {
				wg.Go(func() {
					for i := range rounds {
						res := runProclock(t, line("run", "--mechanism", mech, lock, helper("occupy", marker, counter))...)
						if res.code != 0 {
							t.Errorf("worker %d round %d: exit %d; stderr: %s", w, i, res.code, res.stderr)
						}
					}
				})
			}
			wg.Wait()
			if got := readCount(counter); got != workers*rounds {
				t.Errorf("counter = %d, want %d: turns overlapped", got, workers*rounds)
			}
			if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("marker left behind: %v", err)
			}
		})
	}
}

// TestRunWaitsByDefault: a second run waits for the holder, and runs its
// COMMAND once the holder lets go.
func TestRunWaitsByDefault(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			skipFileOnWine(t, mech)
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			a := holdLock(t, "run", "--mechanism", mech, lock)
			b := startProclock(t, line("run", "--mechanism", mech, lock, helper("echo", "b ran"))...)
			// b is waiting or about to; either way the lock stays a's.
			st := statusJSON(t, lock)
			if st.State != "held" || st.Holder == nil || st.Holder.PID != a.cmd.Process.Pid {
				t.Fatalf("status while a holds = %+v, want held by a (pid %d)", st, a.cmd.Process.Pid)
			}
			a.release()
			b.expectLine("b ran")
			if res := b.wait(); res.code != 0 {
				t.Fatalf("waiter: exit %d, want 0; stderr: %s", res.code, res.stderr)
			}
		})
	}
}

// TestRunHeld: -n, -E and -w on a held lock fail with the holder's pid on
// stderr, and never start COMMAND.
func TestRunHeld(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			skipFileOnWine(t, mech)
			t.Parallel()
			dir := t.TempDir()
			lock, marker := filepath.Join(dir, "x.lock"), filepath.Join(dir, "ran")
			a := holdLock(t, "run", "--mechanism", mech, lock)
			holderPID := fmt.Sprintf("pid %d", a.cmd.Process.Pid)
			for _, tc := range []struct {
				flags []string
				code  int
			}{
				{[]string{"-n"}, 1},
				{[]string{"-n", "-E", "75"}, 75},
				{[]string{"-E", "0", "-n"}, 0},
				{[]string{"-w", "200ms"}, 1},
				{[]string{"-w", "200ms", "-E", "75"}, 75},
				{[]string{"-w", "0"}, 1},
			} {
				args := line("run", "--mechanism", mech, tc.flags, lock, helper("occupy", marker, marker+".count"))
				res := runProclock(t, args...)
				if res.code != tc.code {
					t.Errorf("%q: exit %d, want %d; stderr: %s", tc.flags, res.code, tc.code, res.stderr)
				}
				oneLine(t, fmt.Sprintf("%q: stderr", tc.flags), res.stderr)
				if !strings.Contains(res.stderr, holderPID+" ") || !strings.Contains(res.stderr, "mechanism "+mech) {
					t.Errorf("%q: stderr %q does not name the holder (%s) and mechanism %s", tc.flags, res.stderr, holderPID, mech)
				}
				if _, err := os.Stat(marker + ".count"); err == nil {
					t.Fatalf("%q: COMMAND ran while the lock was held", tc.flags)
				}
			}
			a.release()
			if res := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...); res.code != 0 {
				t.Errorf("-n on a released lock: exit %d; stderr: %s", res.code, res.stderr)
			}
		})
	}
}

// TestRunExitStatus: proclock exits with COMMAND's status.
func TestRunExitStatus(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "x.lock")
	for _, code := range []int{0, 3, 42} {
		res := runProclock(t, line("run", lock, helper("exit", strconv.Itoa(code)))...)
		if res.code != code {
			t.Errorf("COMMAND exits %d: proclock exits %d; stderr: %s", code, res.code, res.stderr)
		}
	}
}

// TestRunRemove: --remove takes the SQLite database away on release; the
// file mechanism removes its lock file always.
func TestRunRemove(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		mech   string
		remove bool
		stays  bool
	}{
		{"sqlite", false, true},
		{"sqlite", true, false},
		{"file", false, false},
		{"file", true, false},
	} {
		if v := locktest.Wine(); tc.mech == "file" && v != "" {
			t.Logf("%s: %s; the file mechanism's cases are left out", v, locktest.WineBirthTime)
			continue
		}
		lock := filepath.Join(t.TempDir(), "x.lock")
		flags := []string{"--mechanism", tc.mech}
		if tc.remove {
			flags = append(flags, "--remove")
		}
		if res := runProclock(t, line("run", flags, lock, helper("exit", "0"))...); res.code != 0 {
			t.Fatalf("%q: exit %d; stderr: %s", flags, res.code, res.stderr)
		}
		_, err := os.Lstat(lock)
		if stays := err == nil; stays != tc.stays {
			t.Errorf("%q: lock file there after release: %v, want %v", flags, stays, tc.stays)
		}
		if _, err := os.Lstat(lock + ".holder"); err == nil {
			t.Errorf("%q: .holder left after release", flags)
		}
	}
}

// statusOut is what status --json prints, decoded.
type statusOut struct {
	FormatVersion int    `json:"formatVersion"`
	Path          string `json:"path"`
	State         string `json:"state"`
	Reason        string `json:"reason"`
	Holder        *struct {
		Host               string    `json:"host"`
		PID                int       `json:"pid"`
		ProcessStart       time.Time `json:"processStart"`
		StartTime          uint64    `json:"startTime"`
		TimeNamespace      uint64    `json:"timeNamespace"`
		BootOffset         int64     `json:"bootOffset"`
		OtherPIDNamespace  bool      `json:"otherPidNamespace"`
		OtherTimeNamespace bool      `json:"otherTimeNamespace"`
	} `json:"holder"`
	AcquiredAt     time.Time `json:"acquiredAt"`
	HeldForSeconds *float64  `json:"heldForSeconds"`
	Mechanism      string    `json:"mechanism"`
}

// The JSON names status documents; the test fails if the output has any
// other, so that a renamed field cannot slip by.
var (
	statusFields = []string{"formatVersion", "path", "state", "reason", "holder", "acquiredAt", "heldForSeconds", "mechanism"}
	holderFields = []string{"host", "bootId", "pid", "processStart", "startTime", "pidNamespace",
		"timeNamespace", "bootOffset", "otherPidNamespace", "otherTimeNamespace", "launcherPid"}
)

// statusJSON runs status --json and decodes it, checking its field names
// and that its exit code agrees with its state.
func statusJSON(t *testing.T, lock string, flags ...string) statusOut {
	t.Helper()
	res := runProclock(t, line("status", "--json", flags, lock)...)
	var raw map[string]json.RawMessage
	if err := json.Unmarshal([]byte(res.stdout), &raw); err != nil || strings.Count(res.stdout, "\n") != 1 {
		t.Fatalf("status --json printed %q (%v), want one JSON object on one line; stderr: %s", res.stdout, err, res.stderr)
	}
	for k := range raw {
		if !slices.Contains(statusFields, k) {
			t.Errorf("status --json has undocumented field %q", k)
		}
	}
	if h, ok := raw["holder"]; ok {
		var holder map[string]any
		json.Unmarshal(h, &holder)
		for k := range holder {
			if !slices.Contains(holderFields, k) {
				t.Errorf("status --json holder has undocumented field %q", k)
			}
		}
	}
	var st statusOut
	if err := json.Unmarshal([]byte(res.stdout), &st); err != nil {
		t.Fatal(err)
	}
	if st.FormatVersion != statusFormat {
		t.Errorf("status --json: formatVersion %d, want %d", st.FormatVersion, statusFormat)
	}
	want := map[string]int{"absent": 0, "free": 0, "stale": 0, "held": 1, "inaccessible": 2, "foreign": 2}
	if code, ok := want[st.State]; !ok || code != res.code {
		t.Errorf("status --json: state %q with exit %d", st.State, res.code)
	}
	return st
}

// TestStatus: status and status --json on absent, free and held locks.
func TestStatus(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			skipFileOnWine(t, mech)
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			flags := []string{"--mechanism", mech}

			if st := statusJSON(t, lock, flags...); st.State != "absent" || st.Mechanism != mech || st.Holder != nil {
				t.Errorf("no file: %+v, want absent, %s, no holder", st, mech)
			}
			if res := runProclock(t, line("status", flags, lock)...); res.code != 0 || !strings.Contains(res.stdout, ": free") {
				t.Errorf("no file: exit %d, %q; want 0 and free", res.code, res.stdout)
			}
			if _, err := os.Lstat(lock); err == nil {
				t.Errorf("status created %s", lock)
			}

			a := holdLock(t, "run", "--mechanism", mech, lock)
			st := statusJSON(t, lock) // auto finds the mechanism
			if st.State != "held" || st.Mechanism != mech || st.Holder == nil || st.Holder.PID != a.cmd.Process.Pid ||
				st.AcquiredAt.IsZero() || st.HeldForSeconds == nil || *st.HeldForSeconds < 0 {
				t.Fatalf("held: %+v, want held by pid %d with %s, acquiredAt and heldForSeconds set", st, a.cmd.Process.Pid, mech)
			}
			// The process start, read back from the holder's recorded
			// start time, comes before it took the lock (linux's boot
			// time is to the second: a second's slack).
			if ps := st.Holder.ProcessStart; ps.IsZero() || ps.After(st.AcquiredAt.Add(time.Second)) || ps.Before(st.AcquiredAt.Add(-time.Hour)) {
				t.Errorf("held: processStart %v (startTime %d), want a time shortly before acquiredAt %v", ps, st.Holder.StartTime, st.AcquiredAt)
			}
			res := runProclock(t, "status", lock)
			if res.code != 1 || !strings.Contains(res.stdout, fmt.Sprintf(": held by pid %d ", a.cmd.Process.Pid)) ||
				!strings.Contains(res.stdout, "mechanism "+mech) || strings.Count(res.stdout, "\n") > 2 {
				t.Errorf("held: exit %d, %q; want 1 and two lines naming pid %d and %s", res.code, res.stdout, a.cmd.Process.Pid, mech)
			}
			a.release()

			st = statusJSON(t, lock, flags...)
			if want := map[string]string{"sqlite": "free", "file": "absent"}[mech]; st.State != want {
				t.Errorf("released: %+v, want %s", st, want)
			}
		})
	}
}

// TestUsage: help and version print to stdout and exit 0.
func TestUsage(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"-h"}, {"--help"}, {"help"}, {"help", "run"}, {"help", "status"},
		{"run", "-h"}, {"run", "--help"}, {"status", "-h"}, {"status", "--help"},
	} {
		var out, errb bytes.Buffer
		code := cli(args, streams{in: strings.NewReader(""), out: &out, err: &errb})
		if code != 0 || !strings.Contains(out.String(), "Usage") || !strings.Contains(out.String(), "Examples:") || errb.Len() != 0 {
			t.Errorf("%q: exit %d, stdout %d bytes with usage and examples: %v, stderr %q", args, code, out.Len(),
				strings.Contains(out.String(), "Examples:"), errb.String())
		}
	}
	res := runProclock(t, "--version")
	if res.code != 0 || !strings.HasPrefix(res.stdout, "proclock ") || len(strings.Fields(res.stdout)) != 2 {
		t.Errorf("--version: exit %d, %q", res.code, res.stdout)
	}
}

// TestErrors: bad input gives one line on stderr and exit 2 (127 for a
// command not found), touching no lock.
func TestErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lock := filepath.Join(dir, "x.lock")
	cmd := helper("exit", "0")
	for _, tc := range []struct {
		args []string
		code int
	}{
		{nil, 2},
		{[]string{"lock"}, 2},
		{[]string{"run"}, 2},
		{[]string{"run", lock}, 2},
		{[]string{"run", lock, testBinary}, 2},
		{[]string{"run", lock, "-n", "--", testBinary}, 2},
		{[]string{"run", lock, "--"}, 2},
		{[]string{"run", "", "--", testBinary}, 2},
		{line("run", "-w", "soon", lock, cmd), 2},
		{line("run", "-w", "-1s", lock, cmd), 2},
		{line("run", "-n", "-w", "1s", lock, cmd), 2},
		{line("run", "-E", "256", lock, cmd), 2},
		{line("run", "-E", "x", lock, cmd), 2},
		{line("run", "--mechanism", "flock", lock, cmd), 2},
		{line("run", "--bogus", lock, cmd), 2},
		{line("run", dir, cmd), 2},
		{line("run", filepath.Join(dir, "no", "x.lock"), cmd), 2},
		{[]string{"run", lock, "--", "proclock-test-no-such-command"}, 127},
		{[]string{"run", lock, "--", filepath.Join(dir, "no-such-file")}, 127},
		{[]string{"status"}, 2},
		{[]string{"status", lock, lock}, 2},
		{[]string{"status", "--bogus", lock}, 2},
		{[]string{"status", "--mechanism", "x", lock}, 2},
		{[]string{"status", dir}, 2},
		{[]string{"status", filepath.Join(dir, "no", "x.lock")}, 2},
	} {
		var out, errb bytes.Buffer
		code := cli(tc.args, streams{in: strings.NewReader(""), out: &out, err: &errb})
		if code != tc.code {
			t.Errorf("%q: exit %d, want %d; stderr: %s", tc.args, code, tc.code, errb.String())
		}
		oneLine(t, fmt.Sprintf("%q: stderr", tc.args), errb.String())
		if out.Len() != 0 {
			t.Errorf("%q: stdout %q, want nothing", tc.args, out.String())
		}
		if _, err := os.Lstat(lock); err == nil {
			t.Fatalf("%q: created the lock", tc.args)
		}
	}
	// The binary reports them the same way (main passes the code on).
	if res := runProclock(t, "run", lock, "--", "proclock-test-no-such-command"); res.code != 127 {
		t.Errorf("binary, command not found: exit %d, want 127; stderr %q", res.code, res.stderr)
	}
	if res := runProclock(t, "run", lock); res.code != 2 {
		t.Errorf("binary, no COMMAND: exit %d, want 2; stderr %q", res.code, res.stderr)
	}
}

// TestRunMixedMechanisms: runs of either mechanism on one lock keep each
// other out and name each other's holder, and status reads either.
func TestRunMixedMechanisms(t *testing.T) {
	t.Parallel()
	for _, pair := range [][2]string{{"sqlite", "file"}, {"file", "sqlite"}} {
		lock := filepath.Join(t.TempDir(), "x.lock")
		holder := holdLock(t, "run", "--mechanism", pair[0], lock)
		res := runProclock(t, line("run", "-n", "--mechanism", pair[1], lock, helper("exit", "0"))...)
		if res.code != 1 || !strings.Contains(res.stderr, fmt.Sprintf("pid %d", holder.cmd.Process.Pid)) {
			t.Errorf("%s over a held %s lock: exit %d, want 1 naming pid %d; stderr: %s", pair[1], pair[0], res.code, holder.cmd.Process.Pid, res.stderr)
		}
		oneLine(t, "stderr", res.stderr)
		for _, mech := range []string{"sqlite", "file"} {
			res := runProclock(t, "status", "--mechanism", mech, lock)
			if res.code != 1 || !strings.Contains(res.stdout, fmt.Sprintf("pid %d", holder.cmd.Process.Pid)) || !strings.Contains(res.stdout, "mechanism "+pair[0]) {
				t.Errorf("status --mechanism %s of a %s holder: exit %d, want 1 naming pid %d and mechanism %s; stdout: %s", mech, pair[0], res.code, holder.cmd.Process.Pid, pair[0], res.stdout)
			}
		}
		holder.release()
		if res := runProclock(t, line("run", "-n", "--mechanism", pair[1], lock, helper("exit", "0"))...); res.code != 0 {
			t.Errorf("%s after the %s holder released: exit %d, want 0; stderr: %s", pair[1], pair[0], res.code, res.stderr)
		}
	}
}

// TestRunKeepsItsOwnScript: flock(1)'s habit of locking the script itself
// ("flock -en $0 $0") fails plainly with proclock, on either mechanism,
// and the script keeps every byte, however old it is.
func TestRunKeepsItsOwnScript(t *testing.T) {
	t.Parallel()
	script := filepath.Join(t.TempDir(), "job.sh")
	body := []byte("#!/bin/sh\necho the job ran\n")
	if err := os.WriteFile(script, body, 0o755); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(script, old, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(script)
	for _, mech := range []string{"auto", "sqlite", "file"} {
		res := runProclock(t, "run", "-n", "--mechanism", mech, script, "--", script)
		if res.code != 2 || !strings.Contains(res.stderr, "not a lock file") || strings.Contains(res.stdout, "the job ran") {
			t.Errorf("--mechanism %s on the script itself: exit %d, want 2 saying not a lock file, without running it; stdout %q stderr %q", mech, res.code, res.stdout, res.stderr)
		}
		oneLine(t, "stderr", res.stderr)
		st := runProclock(t, "status", "--mechanism", mech, script)
		if st.code != 2 || !strings.Contains(st.stdout, "not a lock file") {
			t.Errorf("status --mechanism %s of the script: exit %d, want 2 saying not a lock file; stdout %q", mech, st.code, st.stdout)
		}
	}
	after, err := os.Stat(script)
	got, _ := os.ReadFile(script)
	if err != nil || !os.SameFile(before, after) || !bytes.Equal(got, body) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the script changed: %v, same file %v, bytes %q", err, os.SameFile(before, after), got)
	}
}

// TestRunKeepsUsersFileAtMark: a user's old file at the lock's mark name
// (PATH.holder) is never removed: run with the SQLite mechanism fails
// plainly naming it, status says "not a lock file (on app.lock.holder)"
// and exits 2, and the file keeps every byte. The SQLite mechanism used to
// take it for a crashed holder's mark, and remove it.
func TestRunKeepsUsersFileAtMark(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "app.lock")
	mark := lock + ".holder"
	body := []byte("notes the user keeps here\n")
	if err := os.WriteFile(mark, body, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-48 * time.Hour)
	if err := os.Chtimes(mark, old, old); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Stat(mark)
	res := runProclock(t, line("run", "-n", "--mechanism", "sqlite", lock, helper("exit", "0"))...)
	if res.code != 2 || !strings.Contains(res.stderr, "not a lock file (on app.lock.holder)") {
		t.Errorf("run beside a user's file at the mark: exit %d, want 2 naming app.lock.holder; stderr %q", res.code, res.stderr)
	}
	st := runProclock(t, "status", "--mechanism", "sqlite", lock)
	if st.code != 2 || !strings.Contains(st.stdout, "not a lock file (on app.lock.holder)") {
		t.Errorf("status beside a user's file at the mark: exit %d, want 2 naming app.lock.holder; stdout %q", st.code, st.stdout)
	}
	after, err := os.Stat(mark)
	got, _ := os.ReadFile(mark)
	if err != nil || !os.SameFile(before, after) || !bytes.Equal(got, body) || !after.ModTime().Equal(before.ModTime()) {
		t.Fatalf("the user's file at the mark changed: %v, bytes %q", err, got)
	}
}
