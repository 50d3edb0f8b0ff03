package proclock_test

import (
	"os/exec"
	"strings"
	"testing"
)

// sqlEngine is the module path prefix of SQLite's engine and its VFS
// (go-sqlite3 and what it pulls in).
const sqlEngine = "github.com/ncruces/"

// TestSQLiteEngineOnlyWhereConnectionsOpen: the library links SQLite's
// engine only where it opens SQLite connections (docs/design.md, "What
// compiles where"). On linux the SQLite mechanism takes SQLite's locks
// itself, and wasip1 and js have no SQLite: a program that imports the
// root package, the command, and a user's hermetic test of the fake world
// and conformance compile no go-sqlite3 there. darwin, windows and the
// BSDs keep the SQL path, so the root package does link it there.
func TestSQLiteEngineOnlyWhereConnectionsOpen(t *testing.T) {
	gotool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("needs the go command to list packages' dependencies (not on PATH here: a cross-run under wine or wasm, say)")
	}
	none := []string{".", "./cmd/proclock", "./fake", "./conformance"}
	for _, c := range []struct {
		target  string
		without []string // link no SQLite engine
		with    []string // link it: the SQL path
	}{
		{"linux/amd64", none, nil},
		{"linux/arm64", none, nil},
		{"wasip1/wasm", none, nil},
		{"js/wasm", none, nil},
		{"darwin/arm64", nil, []string{".", "./cmd/proclock"}},
		{"windows/amd64", nil, []string{".", "./cmd/proclock"}},
		{"freebsd/amd64", nil, []string{".", "./cmd/proclock"}},
	} {
		t.Run(strings.ReplaceAll(c.target, "/", "_"), func(t *testing.T) {
			goos, goarch, _ := strings.Cut(c.target, "/")
			pkgs := append(append([]string{}, c.without...), c.with...)
			cmd := exec.Command(gotool, append([]string{"list", "-f", "{{.ImportPath}}{{range .Deps}} {{.}}{{end}}"}, pkgs...)...)
			cmd.Env = append(cmd.Environ(), "GOOS="+goos, "GOARCH="+goarch, "CGO_ENABLED=0", "GOFLAGS=")
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("go list: %v\n%s", err, stderrOf(err))
			}
			lines := strings.Split(strings.TrimSpace(string(out)), "\n")
			if len(lines) != len(pkgs) {
				t.Fatalf("go list gave %d packages for %d asked:\n%s", len(lines), len(pkgs), out)
			}
			for i, line := range lines {
				deps := strings.Fields(line)[1:]
				var engine []string
				for _, d := range deps {
					if strings.HasPrefix(d, sqlEngine) {
						engine = append(engine, d)
					}
				}
				switch want := i >= len(c.without); {
				case !want && len(engine) > 0:
					t.Errorf("%s links SQLite's engine on %s: %v", pkgs[i], c.target, engine)
				case want && len(engine) == 0:
					t.Errorf("%s links no SQLite engine on %s; want the SQL path there", pkgs[i], c.target)
				}
			}
		})
	}
}

func stderrOf(err error) string {
	if ee, ok := err.(*exec.ExitError); ok {
		return string(ee.Stderr)
	}
	return ""
}
