package main

import (
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proclock/proclock/internal/mdblock"
)

// outFlag is a build line's -o and the file it names.
var outFlag = regexp.MustCompile(`-o (\S+)`)

// TestDocCommands runs, through sh, the lines docs/wasm.md gives to build
// each guest (wasip1 and js) and to start one under wazero's CLI and
// Node.js. The guests are built into a directory of the test's, the hosts
// run there with $DIR and $HOME directories of the test's, and each host
// line prints the guest's "holds" line. The wazero line has -cachedir and
// fills the cache it names. wasmhost's own line (go run .) is left out:
// TestFileNatives runs wasmhost so.
func TestDocCommands(t *testing.T) {
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("the doc's lines are shell lines, and there is no sh here")
	}
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "wasm.md"))
	if err != nil {
		t.Fatal(err)
	}
	var builds, hosts []string
	for _, block := range mdblock.Fenced(string(doc), "sh") {
		for l := range strings.Lines(block) {
			l, _, _ = strings.Cut(l, " #") // the line's comment
			l = strings.TrimSpace(l)
			switch {
			case strings.HasPrefix(l, "GOOS="):
				builds = append(builds, l)
			case strings.HasPrefix(l, "wazero run "), strings.HasPrefix(l, "node "):
				hosts = append(hosts, l)
			}
		}
	}
	for _, want := range []string{"GOOS=wasip1 GOARCH=wasm go build ", "GOOS=js GOARCH=wasm go build "} {
		if !strings.Contains(strings.Join(builds, "\n"), want) {
			t.Errorf("docs/wasm.md has no build line %q...; it gives %q", want, builds)
		}
	}
	for _, want := range []string{"wazero run -cachedir ", "node "} {
		if !strings.Contains(strings.Join(hosts, "\n"), want) {
			t.Errorf("docs/wasm.md has no host line %q...; it gives %q", want, hosts)
		}
	}

	ctx := testContext(t)
	out, home, dir := t.TempDir(), t.TempDir(), t.TempDir()
	// shell runs line in cwd, with env beside the test's own (which the
	// build lines keep, and with it the build cache under $HOME).
	shell := func(t *testing.T, cwd, line string, env ...string) string {
		t.Helper()
		cmd := exec.CommandContext(ctx, sh, "-c", line)
		cmd.Dir = cwd
		cmd.Env = append(os.Environ(), env...)
		got, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("docs/wasm.md's %q: %v\n%s", line, err, got)
		}
		return string(got)
	}
	for _, l := range builds {
		m := outFlag.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("docs/wasm.md's build line %q names no -o file", l)
		}
		// The guest goes to the test's directory, not into the source tree.
		shell(t, ".", strings.Replace(l, m[0], "-o "+filepath.Join(out, m[1]), 1))
	}
	for _, l := range hosts {
		t.Run(strings.Fields(l)[0], func(t *testing.T) {
			if _, err := exec.LookPath(strings.Fields(l)[0]); err != nil {
				t.Skipf("%s is not installed here, so its line cannot run", strings.Fields(l)[0])
			}
			if got := shell(t, out, l, "HOME="+home, "DIR="+dir); !strings.HasPrefix(got, "holds ") {
				t.Errorf("docs/wasm.md's %q printed %q; want the guest's holds line", l, got)
			}
			if strings.HasPrefix(l, "wazero ") && filesUnder(t, home) == 0 {
				t.Errorf("docs/wasm.md's %q left no file under $HOME; want -cachedir's compiled guest there", l)
			}
		})
	}
	if _, err := os.Stat(filepath.Join(dir, "agent.lock")); !os.IsNotExist(err) {
		t.Errorf("agent.lock after the guests released it: %v; want it gone (the file mechanism removes it)", err)
	}
}

// filesUnder counts the files under dir.
func filesUnder(t *testing.T, dir string) int {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}
