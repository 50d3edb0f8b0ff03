package cluster

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/mdblock"
)

// The copy-paste commands of docs/cluster.md and README.md's cluster
// install line, run as written from the top of the checkout: a reader on
// a fresh clone types them there. .ci/run runs this test on a fresh clone
// of HEAD, so that a command cannot lean on a file left in a working tree.

// repoTop is the checkout's top directory, one up from the module.
const repoTop = ".."

// shBlocks returns the fenced sh blocks of the file at path (relative to
// the checkout's top).
func shBlocks(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoTop, path))
	if err != nil {
		t.Fatal(err)
	}
	return mdblock.Fenced(string(b), "sh")
}

// docShell is sh running script in dir, in a process group of its own
// (so that the test can signal it as a terminal would, and kill what is
// left), with env added to this process's environment less ETCDCTL_*: an
// etcd:/// name must take the documented 127.0.0.1:2379, not a
// developer's cluster.
//
// With netns, script runs in a network namespace of its own, with only
// a loopback (see isolated).
func docShell(netns bool, dir, script string, env ...string) *exec.Cmd {
	cmd := exec.Command("sh", "-c", script)
	if netns {
		// unshare execs sh in the new namespace: the same pid, which
		// leads the group. The block itself runs as written, by eval.
		cmd = exec.Command("unshare", "--net", "--", "sh", "-c", `ip link set lo up && eval "$1"`, "sh", script)
	}
	cmd.Dir = dir
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "ETCDCTL_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.Env = append(cmd.Env, env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	return cmd
}

// runDoc runs script as docShell does and returns its output (stdout and
// stderr) and exit error; the group is killed after limit, a hang.
func runDoc(t *testing.T, netns bool, dir, script string, limit time.Duration, env ...string) (string, error) {
	t.Helper()
	cmd := docShell(netns, dir, script, env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(limit, func() { syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) })
	err := cmd.Wait()
	if !hung.Stop() {
		t.Fatalf("%q did not end within %v; killed. Output:\n%s", script, limit, out.String())
	}
	return out.String(), err
}

// docPorts are devetcd's default addresses, which the commands name.
var docPorts = []string{"127.0.0.1:2379", "127.0.0.1:2380"}

// isolated reports whether the blocks that serve on docPorts can run in
// a network namespace of their own (as root, with unshare(1) and ip(8)),
// so that another server on this machine's 127.0.0.1:2379 (a developer's
// devetcd) neither fails them nor answers them.
func isolated(t *testing.T) bool {
	t.Helper()
	if os.Geteuid() != 0 {
		return false
	}
	err := exec.Command("unshare", "--net", "--", "sh", "-c", "ip link set lo up").Run()
	if err != nil {
		t.Logf("no network namespace for the blocks (%v): they use this machine's loopback", err)
	}
	return err == nil
}

// portsFree fails the test when one of docPorts is taken, unless the
// blocks run isolated: the commands cannot run as written beside another
// server there.
func portsFree(t *testing.T, netns bool) {
	t.Helper()
	if netns {
		return
	}
	for _, addr := range docPorts {
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			t.Fatalf("%s is taken (%v): the documented commands need it; stop what listens there", addr, err)
		}
		ln.Close()
	}
}

// noneLeft fails the test when one of files (relative to the checkout's
// top) exists: before, a command's check would prove nothing; after, the
// command left it behind.
func noneLeft(t *testing.T, when string, files ...string) {
	t.Helper()
	for _, f := range files {
		if _, err := os.Lstat(filepath.Join(repoTop, f)); err == nil {
			t.Errorf("%s: %s exists", when, f)
		}
	}
}

// TestDocsCommands runs each sh block of docs/cluster.md, and README.md's
// cluster install line, as written. A block it does not know fails it:
// a new copy-paste command gets a check here.
func TestDocsCommands(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the commands are run and checked on linux (sh, process groups, loopback ports), as .ci/run does")
	}
	if testing.Short() {
		t.Skip("-short: the documented commands build etcd, download modules into a fresh cache and run the benchmarks")
	}
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the commands are go commands, and go is not here: %v", err)
	}
	netns := isolated(t)
	known := []struct {
		name  string
		match func(string) bool
		run   func(*testing.T, string)
	}{
		{"root package only, no etcd", func(b string) bool { return strings.Contains(b, "GOMODCACHE=$(mktemp -d)") }, docNoEtcd},
		{"devetcd in the foreground", func(b string) bool { return strings.Contains(b, "go run ./cmd/devetcd") }, func(t *testing.T, b string) { docDevetcd(t, netns, b) }},
		{"the command tried", func(b string) bool { return strings.Contains(b, "go build -o devetcd") }, func(t *testing.T, b string) { docTryCommand(t, netns, b) }},
		{"the command installed", func(b string) bool { return strings.Contains(b, "go install ./cmd/proclock") }, docInstall},
		{"the module's tests", func(b string) bool { return strings.TrimSpace(b) == "cd cluster && go test ./..." }, docModuleTests},
		{"benchmarks", func(b string) bool { return strings.Contains(b, "go test -run '^$' -bench") }, docBenchmarks},
	}
	blocks := shBlocks(t, "docs/cluster.md")
	seen := map[string]int{}
	for i, b := range blocks {
		ran := false
		for _, k := range known {
			if k.match(b) {
				seen[k.name]++
				t.Run(fmt.Sprintf("cluster.md#%d %s", i+1, k.name), func(t *testing.T) { k.run(t, b) })
				ran = true
				break
			}
		}
		if !ran {
			t.Errorf("docs/cluster.md's sh block %d is not run by this test; teach it:\n%s", i+1, b)
		}
	}
	for _, k := range known {
		if seen[k.name] == 0 {
			t.Errorf("docs/cluster.md has no sh block for %q any more; update this test", k.name)
		}
	}

	var install string
	for _, b := range shBlocks(t, "README.md") {
		if strings.Contains(b, "cluster") {
			install = strings.TrimSpace(b)
		}
	}
	if install == "" {
		t.Fatal("README.md has no sh block that installs the cluster command")
	}
	t.Run("README install", func(t *testing.T) { docInstall(t, install) })
}

// docNoEtcd: in a program that imports only the root package, the block
// downloads no etcd module and lists no etcd package.
func docNoEtcd(t *testing.T, block string) {
	top, err := filepath.Abs(repoTop)
	if err != nil {
		t.Fatal(err)
	}
	app := t.TempDir()
	tmp := t.TempDir()
	// The block's module cache (mktemp -d in tmp) is read-only, as the go
	// command leaves it; TempDir's removal needs it writable. Cleanups
	// run last first: this one runs before tmp's removal.
	t.Cleanup(func() { exec.Command("chmod", "-R", "u+w", tmp).Run() })
	gomod := fmt.Sprintf("module example.com/app\n\ngo 1.26.0\n\nrequire github.com/proclock/proclock v0.0.0\n\nreplace github.com/proclock/proclock => %s\n", top)
	main := "package main\n\nimport (\n\t\"context\"\n\n\t\"github.com/proclock/proclock\"\n\t\"github.com/proclock/proclock/platform\"\n)\n\nfunc main() { proclock.Acquire(context.Background(), platform.Native(), \"app.lock\", proclock.Options{}) }\n"
	for name, text := range map[string]string{"go.mod": gomod, "main.go": main} {
		if err := os.WriteFile(filepath.Join(app, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out, err := runDoc(t, false, app, block, 10*time.Minute, "TMPDIR="+tmp, "GOFLAGS=")
	t.Logf("the block printed:\n%s", out)
	if err != nil {
		t.Fatalf("the block failed: %v", err)
	}
	if !strings.Contains(out, `"Path": "github.com/ncruces/go-sqlite3"`) {
		t.Errorf("the block's download lists no go-sqlite3: it did not download the program's modules")
	}
	if strings.Contains(out, "etcd") {
		t.Errorf("the block names etcd: a program of the root package alone downloads or lists it")
	}
	zeros := 0
	for l := range strings.Lines(out) {
		if strings.TrimSpace(l) == "0" {
			zeros++
		}
	}
	if zeros != 2 {
		t.Errorf("the block printed %d lines of 0; want its two counts of etcd (packages, module cache) at 0", zeros)
	}
	caches, _ := filepath.Glob(filepath.Join(tmp, "*"))
	if len(caches) != 1 {
		t.Fatalf("want the block's one module cache in %s, found %q", tmp, caches)
	}
	list := exec.Command("go", "list", "-m", "all")
	list.Dir, list.Env = app, append(os.Environ(), "GOMODCACHE="+caches[0], "GOFLAGS=-mod=mod")
	mods, err := list.CombinedOutput()
	if err != nil || bytes.Contains(mods, []byte("etcd")) {
		t.Errorf("go list -m all: %v; want no etcd module:\n%s", err, mods)
	}
}

// servingLine is devetcd's line once it serves.
var servingLine = regexp.MustCompile(`etcd v[0-9.]+ serving on (\S+) \(data in (\S+)\)`)

// docDevetcd: the block serves on the documented address, and Ctrl-C (a
// terminal's SIGINT to the foreground group) stops it and removes its
// data.
func docDevetcd(t *testing.T, netns bool, block string) {
	portsFree(t, netns)
	cmd := docShell(netns, repoTop, block)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	hung := time.AfterFunc(10*time.Minute, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	defer hung.Stop()
	lines := bufio.NewScanner(out)
	var m []string
	for m == nil && lines.Scan() {
		m = servingLine.FindStringSubmatch(lines.Text())
	}
	if m == nil {
		syscall.Kill(-pgid, syscall.SIGKILL)
		cmd.Wait()
		t.Fatal("devetcd ended without its serving line")
	}
	if m[1] != "127.0.0.1:2379" {
		t.Errorf("devetcd serves on %s; the docs say 127.0.0.1:2379", m[1])
	}
	if !netns {
		if c, err := net.Dial("tcp", m[1]); err != nil {
			t.Errorf("devetcd said it serves, but %s: %v", m[1], err)
		} else {
			c.Close()
		}
	}
	syscall.Kill(-pgid, syscall.SIGINT) // Ctrl-C
	for lines.Scan() {
	}
	// EOF: every process that had the pipe (sh, go run, devetcd) is gone.
	cmd.Wait()
	if _, err := os.Stat(m[2]); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("devetcd's data %s after Ctrl-C: %v; want it removed", m[2], err)
	}
	if c, err := net.Dial("tcp", m[1]); err == nil && !netns {
		c.Close()
		t.Errorf("%s still serves after Ctrl-C", m[1])
	}
}

// docTryCommand: the block prints the first run's fence and key, the
// second run is held and exits 1, status says absent, and nothing is
// left: no devetcd, no built program.
func docTryCommand(t *testing.T, netns bool, block string) {
	portsFree(t, netns)
	files := []string{"cluster/devetcd", "cluster/proclock"}
	noneLeft(t, "before the block", files...)
	if t.Failed() {
		t.FailNow()
	}
	t.Cleanup(func() {
		for _, f := range files {
			os.Remove(filepath.Join(repoTop, f))
		}
	})
	cmd := docShell(netns, repoTop, block)
	var buf bytes.Buffer
	cmd.Stdout, cmd.Stderr = &buf, &buf
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	hung := time.AfterFunc(10*time.Minute, func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	err := cmd.Wait()
	if !hung.Stop() {
		t.Fatalf("the block did not end within 10 minutes; killed")
	}
	out := buf.String()
	t.Logf("the block printed:\n%s", out)
	if err != nil {
		t.Errorf("the block failed: %v", err)
	}
	// The block's wait reaped devetcd: nothing of the block is left.
	if err := syscall.Kill(-pgid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("a process of the block outlived it (devetcd left running?): kill(-%d, 0) = %v", pgid, err)
		syscall.Kill(-pgid, syscall.SIGKILL)
	}
	for _, want := range []string{
		`etcd v[0-9.]+ serving on 127\.0\.0\.1:2379`,
		`(?m)^fence [1-9][0-9]*, key jobs/demo/[0-9a-f]+$`,
		`etcd:///jobs/demo is held by`,
		`(?m)^a second run: exit 1$`,
		`"state":\s*"absent"`,
	} {
		if !regexp.MustCompile(want).MatchString(out) {
			t.Errorf("the block's output does not match %s", want)
		}
	}
	noneLeft(t, "after the block", files...)
}

// docModuleTests: the module's whole suite is .ci/run's cluster step;
// running it again here would run this test inside itself.
func docModuleTests(t *testing.T, block string) {
	ci, err := os.ReadFile(filepath.Join(repoTop, ".ci", "run"))
	if err != nil {
		t.Fatal(err)
	}
	if !regexp.MustCompile(`\(cd cluster && [^)]*go test [^)]*\./\.\.\.`).Match(ci) {
		t.Errorf(".ci/run has no step that runs the cluster module's tests (cd cluster && go test ... ./...); docs/cluster.md's %q rests on it", strings.TrimSpace(block))
	}
}

// benchtime is a benchmark line's -benchtime.
var benchtime = regexp.MustCompile(`-benchtime \S+`)

// docBenchmarks: each benchmark line runs, once per benchmark, and runs
// at least one benchmark (a pattern that matches none passes silently).
func docBenchmarks(t *testing.T, block string) {
	for line := range strings.Lines(block) {
		line = strings.TrimSpace(line)
		if line == "" {
			continue
		}
		once := benchtime.ReplaceAllString(line, "-benchtime 1x")
		if once == line {
			once += " -benchtime 1x"
		}
		out, err := runDoc(t, false, repoTop, once, 10*time.Minute)
		if err != nil {
			t.Errorf("%s: %v\n%s", once, err, out)
			continue
		}
		if !regexp.MustCompile(`(?m)^Benchmark\S+\s+1\s`).MatchString(out) {
			t.Errorf("%s ran no benchmark:\n%s", once, out)
		}
	}
}

// docInstall: README.md's line installs a proclock that takes etcd://
// names.
func docInstall(t *testing.T, line string) {
	bin := t.TempDir()
	out, err := runDoc(t, false, repoTop, line, 10*time.Minute, "GOBIN="+bin)
	if err != nil {
		t.Fatalf("%s: %v\n%s", line, err, out)
	}
	help, err := exec.Command(filepath.Join(bin, "proclock"), "help", "run").CombinedOutput()
	if err != nil || !strings.Contains(string(help), "etcd://") {
		t.Errorf("the installed proclock's help run: %v; want it to take etcd:// names:\n%s", err, help)
	}
}
