//go:build unix

package cli

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestRunCommandShell: -c runs CMD with $SHELL, as flock(1) does, and with
// /bin/sh when SHELL is unset or empty (docs/command.md, "Options").
func TestRunCommandShell(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A shell of the test's own, which says it ran and how.
	own := filepath.Join(dir, "own-shell")
	if err := os.WriteFile(own, []byte("#!/bin/sh\necho \"own shell: $1 $2\"\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	bash, noBash := exec.LookPath("bash")
	for _, tc := range []struct {
		name, shell, script, stdout string
		set                         bool // SHELL is set (to shell)
		needsBash                   bool
	}{
		{name: "SHELL", set: true, shell: own, script: "echo ran", stdout: "own shell: -c echo ran"},
		{name: "a flock line with [[ ]]", set: true, shell: bash, script: "[[ 1 == 1 ]] && echo ran", stdout: "ran", needsBash: true},
		{name: "SHELL unset", script: "echo $((40+2))", stdout: "42"},
		{name: "SHELL empty", set: true, script: "echo $((40+2))", stdout: "42"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.needsBash && noBash != nil {
				t.Skip("no bash here")
			}
			cmd := proclockCmd([]string{"run", filepath.Join(t.TempDir(), "x.lock"), "-c", tc.script})
			cmd.Env = slices.DeleteFunc(cmd.Env, func(kv string) bool { return strings.HasPrefix(kv, "SHELL=") })
			if tc.set {
				cmd.Env = append(cmd.Env, "SHELL="+tc.shell)
			}
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("proclock: %v; stderr: %s", err, stderr.String())
			}
			if got := strings.TrimSpace(stdout.String()); got != tc.stdout {
				t.Errorf("stdout %q, want %q", got, tc.stdout)
			}
		})
	}
}
