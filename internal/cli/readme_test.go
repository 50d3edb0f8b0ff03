package cli

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/proclock/proclock/internal/mdblock"
)

// The README's code is checked here, beside the command its demo runs:
// every Go snippet compiles and vets, and the demo prints what the README
// says it prints.

// repoRoot is the module's root, two directories up.
var repoRoot = filepath.Join("..", "..")

// readmeBlocks returns the README's fenced blocks of the given language.
func readmeBlocks(t *testing.T, lang string) []string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	return mdblock.Fenced(string(b), lang)
}

// snippetImports are the packages README snippets may use, by the name
// they are used under.
var snippetImports = map[string]string{
	"proclock":    "github.com/proclock/proclock",
	"platform":    "github.com/proclock/proclock/platform",
	"fake":        "github.com/proclock/proclock/fake",
	"conformance": "github.com/proclock/proclock/conformance",
	"context":     "context",
	"errors":      "errors",
	"filepath":    "path/filepath",
	"fmt":         "fmt",
	"log":         "log",
	"os":          "os",
	"time":        "time",
}

// TestREADMESnippetsCompile: each Go block of README.md, as the body of a
// function that has a ctx, with the imports it uses, builds and passes go
// vet. The files are laid over the module (go vet -overlay), so nothing
// is written into the source tree.
func TestREADMESnippetsCompile(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skipf("the snippets are built with the go command, which is not here: %v", err)
	}
	t.Parallel()
	blocks := readmeBlocks(t, "go")
	if len(blocks) < 2 {
		t.Fatalf("README.md has %d Go blocks, want the use and testing ones at least", len(blocks))
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()
	// testdata exists, which go vet needs of the package directory.
	pkgDir := filepath.Join(root, "internal", "cli", "testdata")
	overlay := map[string]string{}
	for i, body := range blocks {
		imports := []string{`"context"`}
		for name, path := range snippetImports {
			if regexp.MustCompile(`\b`+name+`\.`).MatchString(body) && name != "context" {
				imports = append(imports, fmt.Sprintf("%q", path))
			}
		}
		slices.Sort(imports)
		src := fmt.Sprintf("package snippets\n\nimport (\n\t%s\n)\n\n// Snippet%d is README.md's Go block %d.\nfunc Snippet%d(ctx context.Context) {\n%s}\n",
			strings.Join(imports, "\n\t"), i, i+1, i, body)
		file := filepath.Join(tmp, fmt.Sprintf("snippet%d.go", i))
		if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		overlay[filepath.Join(pkgDir, fmt.Sprintf("snippet%d.go", i))] = file
	}
	ov, _ := json.Marshal(map[string]any{"Replace": overlay})
	ovFile := filepath.Join(tmp, "overlay.json")
	if err := os.WriteFile(ovFile, ov, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("go", "vet", "-overlay", ovFile, "./internal/cli/testdata")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Errorf("README.md's Go blocks do not build or vet: %v\n%s", err, out)
	}
}

// TestREADMEDemo runs the README's demo line from the module's root: it
// says the lock is held by a pid, then free, exits 0 and leaves no file
// behind.
func TestREADMEDemo(t *testing.T) {
	if runtime.GOOS == "windows" {
		t.Skip("the demo is a sh command line")
	}
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("no sh to run the demo")
	}
	var demo string
	for _, b := range readmeBlocks(t, "sh") {
		if strings.Contains(b, "demo.lock") {
			demo = strings.TrimSpace(b)
		}
	}
	if demo == "" || strings.Count(demo, "\n") != 0 {
		t.Fatalf("README.md's demo %q: want one sh line that names demo.lock", demo)
	}
	for _, f := range []string{"demo.lock", "demo.lock.holder", "proclock"} {
		if _, err := os.Lstat(filepath.Join(repoRoot, f)); err == nil {
			t.Fatalf("%s is in the module's root already: the demo's check would prove nothing", f)
		}
		t.Cleanup(func() { os.Remove(filepath.Join(repoRoot, f)) })
	}
	cmd := exec.Command("sh", "-c", demo)
	cmd.Dir = repoRoot
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("demo: %v\n%s", err, out)
	}
	want := regexp.MustCompile(`(?s)^demo\.lock: held by pid \d+ on \S+\n  process started .*, mechanism \w+\ndemo\.lock: free \(no lock file; mechanism \w+\)\n$`)
	if !want.Match(out) {
		t.Errorf("demo printed\n%s\nwant the lock held by a pid, then free, as README.md shows", out)
	}
	for _, f := range []string{"demo.lock", "demo.lock.holder", "proclock"} {
		if _, err := os.Lstat(filepath.Join(repoRoot, f)); err == nil {
			t.Errorf("the demo left %s behind", f)
		}
	}
}
