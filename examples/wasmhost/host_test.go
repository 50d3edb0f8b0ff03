package main

import (
	"bufio"
	"context"
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
	"syscall"
	"testing"
	"time"
)

// These tests run real agents on one lock path: the guest built for this
// OS (a native agent), for wasip1 under wasmhost (wazero, embedded), and
// for js under Node.js. TestMain builds them once; without node the js
// agent's cases are skipped, saying so.

var bin struct {
	dir      string // the built programs
	cache    string // wasmhost's compilation cache, shared by all its runs and wazero's CLI's
	node     string // node, or "" when missing
	wasmExec string // Go's wasm_exec_node.js
	err      error  // why the programs could not be built
}

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "wasmhost-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	bin.dir, bin.cache = dir, filepath.Join(dir, "cache")
	bin.err = build(dir)
	bin.node, _ = exec.LookPath("node")
	bin.wasmExec = filepath.Join(runtime.GOROOT(), "lib", "wasm", "wasm_exec_node.js")
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// build builds wasmhost and the guest for this OS, wasip1 and js, and
// proclock's command for this OS and wasip1.
func build(dir string) error {
	for _, b := range []struct{ goos, out, pkg string }{
		{"", "wasmhost", "."},
		{"", "guest", "./guest"},
		{"wasip1", "guest.wasm", "./guest"},
		{"js", "guest-js.wasm", "./guest"},
		{"", "proclock", "github.com/proclock/proclock/cmd/proclock"},
		{"wasip1", "proclock.wasm", "github.com/proclock/proclock/cmd/proclock"},
	} {
		cmd := exec.Command("go", "build", "-o", filepath.Join(dir, b.out), b.pkg)
		if b.goos != "" {
			cmd.Env = append(os.Environ(), "GOOS="+b.goos, "GOARCH=wasm")
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go build %s for %q: %v\n%s", b.pkg, b.goos, err, out)
		}
	}
	return nil
}

// kind is one kind of lock user.
type kind struct {
	name string
	mech string // the mechanism its locks use
	// command runs the guest with args, in the kind's way.
	command func(lockDir string, args ...string) *exec.Cmd
}

// nativeKind is the guest as a native process, locking with mech ("auto":
// SQLite; "file": the file mechanism).
func nativeKind(mech string) kind {
	want := "sqlite"
	if mech == "file" {
		want = "file"
	}
	return kind{name: "native-" + mech, mech: want, command: func(_ string, args ...string) *exec.Cmd {
		return exec.Command(filepath.Join(bin.dir, "guest"), append([]string{"-mechanism", mech}, args...)...)
	}}
}

var (
	wasip1Kind = kind{name: "wasip1", mech: "file", command: func(lockDir string, args ...string) *exec.Cmd {
		return exec.Command(filepath.Join(bin.dir, "wasmhost"), append([]string{"-cache", bin.cache, filepath.Join(bin.dir, "guest.wasm"), lockDir}, args...)...)
	}}
	// jsKind's node takes the flags in $WASMHOST_NODE_FLAGS first (CI's
	// are --liftoff-only: a guest that lives for a second only pays for
	// V8's optimizing tier, about 0.3 s of CPU a start).
	jsKind = kind{name: "js", mech: "file", command: func(_ string, args ...string) *exec.Cmd {
		argv := append(strings.Fields(os.Getenv("WASMHOST_NODE_FLAGS")), bin.wasmExec, filepath.Join(bin.dir, "guest-js.wasm"))
		return exec.Command(bin.node, append(argv, args...)...)
	}}
)

// kinds are the three kinds of lock user, natives locking with nativeMech.
func kinds(nativeMech string) []kind { return []kind{nativeKind(nativeMech), wasip1Kind, jsKind} }

// agent is a running guest.
type agent struct {
	t     testing.TB
	kind  kind
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
	done  chan error // the exit, once stdout is drained
	wait  sync.Once
	err   error
}

// start runs k's guest with args in the lock directory dir.
func start(t testing.TB, k kind, dir string, args ...string) *agent {
	t.Helper()
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	if k.name == jsKind.name && bin.node == "" {
		t.Skip("node is not installed: the js guest cannot run (apt-get install nodejs)")
	}
	a := &agent{t: t, kind: k, cmd: k.command(dir, args...), lines: make(chan string, 16), done: make(chan error, 1)}
	a.cmd.Stderr = &testWriter{t: t, prefix: k.name + ": "}
	var err error
	if a.stdin, err = a.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		s := bufio.NewScanner(out)
		for s.Scan() {
			a.lines <- s.Text()
		}
		close(a.lines)
		a.done <- a.cmd.Wait()
	}()
	t.Cleanup(func() {
		a.cmd.Process.Kill()
		a.exit()
	})
	return a
}

// pid is the pid of the agent's process: for a guest, its host's.
func (a *agent) pid() int { return a.cmd.Process.Pid }

// line returns the agent's next line of output.
func (a *agent) line(ctx context.Context) string {
	a.t.Helper()
	select {
	case l, ok := <-a.lines:
		if !ok {
			a.t.Fatalf("%s (pid %d) exited (%v) before its next line", a.kind.name, a.pid(), a.exit())
		}
		return l
	case <-ctx.Done():
		a.t.Fatalf("%s (pid %d): no line: %v", a.kind.name, a.pid(), ctx.Err())
	}
	return ""
}

// expect reads the agent's next line, which must start with word, and
// returns its key=value fields.
func (a *agent) expect(ctx context.Context, word string) map[string]string {
	a.t.Helper()
	l := a.line(ctx)
	fields := strings.Fields(l)
	if len(fields) == 0 || fields[0] != word {
		a.t.Fatalf("%s (pid %d) said %q; want a line starting %q", a.kind.name, a.pid(), l, word)
	}
	kv := map[string]string{}
	for _, f := range fields[1:] {
		k, v, _ := strings.Cut(f, "=")
		kv[k] = v
	}
	return kv
}

// exit waits for the agent to exit, draining its output, and returns how.
func (a *agent) exit() error {
	a.wait.Do(func() {
		for range a.lines {
		}
		a.err = <-a.done
	})
	return a.err
}

// exitCode waits for the agent's exit and returns its code.
func (a *agent) exitCode() int {
	a.t.Helper()
	err := a.exit()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		a.t.Fatalf("%s: %v", a.kind.name, err)
	}
	return 0
}

type testWriter struct {
	t      testing.TB
	prefix string
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.t.Logf("%s%s", w.prefix, strings.TrimSpace(string(p)))
	return len(p), nil
}

func testContext(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

func wantPID(t *testing.T, who string, kv map[string]string, pid int) {
	t.Helper()
	if kv["pid"] != strconv.Itoa(pid) {
		t.Errorf("%s names pid %s; want %d", who, kv["pid"], pid)
	}
}

// TestFileNatives puts the three kinds on one path, natives forced to the
// file mechanism.
func TestFileNatives(t *testing.T) { mixed(t, "file") }

// TestSQLiteNatives does the same with natives on their default mechanism,
// SQLite: a guest (file mechanism) and a SQLite holder must exclude each
// other on one path.
func TestSQLiteNatives(t *testing.T) {
	mixed(t, "auto")
}

func mixed(t *testing.T, nativeMech string) {
	ks := kinds(nativeMech)
	t.Run("free", func(t *testing.T) {
		for _, k := range ks {
			t.Run(k.name, func(t *testing.T) { takesFree(t, k) })
		}
	})
	t.Run("held", func(t *testing.T) {
		for _, holder := range ks {
			for _, taker := range ks {
				t.Run(holder.name+"/"+taker.name, func(t *testing.T) { namesHolder(t, holder, taker) })
			}
		}
	})
	t.Run("critical sections", func(t *testing.T) { criticalSections(t, ks) })
	t.Run("kill", func(t *testing.T) {
		for _, guest := range ks[1:] {
			t.Run(guest.name+" killed/"+ks[0].name+" waits", func(t *testing.T) { killFrees(t, guest, ks[0]) })
			t.Run(ks[0].name+" killed/"+guest.name+" waits", func(t *testing.T) { killFrees(t, ks[0], guest) })
		}
	})
}

// takesFree: an agent takes a free lock, recorded under its process's pid,
// with its kind's mechanism: a native one SQLite unless told otherwise, a
// guest the file mechanism.
func takesFree(t *testing.T, k kind) {
	ctx, dir := testContext(t), t.TempDir()
	a := start(t, k, dir, filepath.Join(dir, "x.lock"))
	kv := a.expect(ctx, "holds")
	wantPID(t, k.name, kv, a.pid())
	if kv["mechanism"] != k.mech {
		t.Errorf("%s locked with mechanism %q; want %q", k.name, kv["mechanism"], k.mech)
	}
	if code := a.exitCode(); code != 0 {
		t.Errorf("%s exited %d; want 0", k.name, code)
	}
}

// namesHolder: while holder holds, taker is told it is held, by holder's
// process.
func namesHolder(t *testing.T, holder, taker kind) {
	ctx, dir := testContext(t), t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h := start(t, holder, dir, "-hold", path)
	h.expect(ctx, "holds")
	a := start(t, taker, dir, path)
	wantPID(t, taker.name+"'s held error", a.expect(ctx, "held"), h.pid())
	if code := a.exitCode(); code != 1 {
		t.Errorf("%s exited %d; want 1 (held)", taker.name, code)
	}
	h.stdin.Close()
	h.expect(ctx, "released")
}

// criticalSections: two natives and one agent of each guest kind run
// critical sections on one lock at once, in rounds (workload.go) so that
// all of them wait for the lock together in each: none overlaps another,
// none loses another's update, and every agent holds once a round.
func criticalSections(t *testing.T, ks []kind) {
	const rounds = 25
	ctx, dir := testContext(t), t.TempDir()
	path := filepath.Join(dir, "x.lock")
	runners := append([]kind{ks[0]}, ks...)
	if bin.node == "" {
		runners = runners[:len(runners)-1]
		t.Log("node is not installed: the js guest does not take part")
	}
	var agents []*agent
	for _, k := range runners {
		agents = append(agents, start(t, k, dir, "-loop", strconv.Itoa(rounds), "-agents", strconv.Itoa(len(runners)), "-dir", dir, path))
	}
	for _, a := range agents {
		kv := a.expect(ctx, "loop")
		if kv["overlaps"] != "0" {
			t.Errorf("%s: %s critical sections overlapped another's", a.kind.name, kv["overlaps"])
		}
		if code := a.exitCode(); code != 0 {
			t.Errorf("%s exited %d", a.kind.name, code)
		}
	}
	b, err := os.ReadFile(filepath.Join(dir, "counter"))
	if err != nil {
		t.Fatal(err)
	}
	if want := strconv.Itoa(rounds * len(agents)); string(b) != want {
		t.Errorf("counter = %s; want %s: an update was lost", b, want)
	}
	b, err = os.ReadFile(filepath.Join(dir, "holders"))
	if err != nil {
		t.Fatal(err)
	}
	held := strings.Fields(string(b))
	if len(held) != rounds*len(agents) {
		t.Fatalf("%d sections in the holders' log; want %d", len(held), rounds*len(agents))
	}
	for r := range rounds {
		round := held[r*len(agents) : (r+1)*len(agents)]
		for _, a := range agents {
			if !slices.Contains(round, strconv.Itoa(a.pid())) {
				t.Errorf("round %d's holders were pids %v; want each agent once, %s (pid %d) among them", r, round, a.kind.name, a.pid())
			}
		}
	}
}

// killFrees: the holder's process is killed while it holds; the waiter,
// which found it held, takes the lock.
func killFrees(t *testing.T, holder, waiter kind) {
	ctx, dir := testContext(t), t.TempDir()
	path := filepath.Join(dir, "x.lock")
	h := start(t, holder, dir, "-hold", path)
	h.expect(ctx, "holds")
	w := start(t, waiter, dir, "-wait", path)
	wantPID(t, waiter.name+" waiting", w.expect(ctx, "held"), h.pid())
	if err := h.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	h.exit() // reaped: its pid is gone
	wantPID(t, waiter.name+" after the kill", w.expect(ctx, "holds"), w.pid())
	if code := w.exitCode(); code != 0 {
		t.Errorf("%s exited %d; want 0", waiter.name, code)
	}
}

// A guest that its host gives no /proc cannot judge holders: it says what
// it needs.
func TestGuestWithoutProc(t *testing.T) {
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	dir := t.TempDir()
	cmd := exec.Command(filepath.Join(bin.dir, "wasmhost"), "-proc", "", "-cache", bin.cache, filepath.Join(bin.dir, "guest.wasm"), dir, filepath.Join(dir, "x.lock"))
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 2 {
		t.Fatalf("guest without /proc: %v; want exit code 2\n%s", err, out)
	}
	const hint = "mount /proc read-only into the guest, or set Platform.Process"
	if !strings.Contains(string(out), hint) {
		t.Errorf("guest without /proc said %q; want it to say %q", out, hint)
	}
	if _, err := os.Stat(filepath.Join(dir, "x.lock")); !os.IsNotExist(err) {
		t.Errorf("guest without /proc left a lock file (%v); want none", err)
	}
}
