package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestRunLauncherPID: PROCLOCK_LAUNCHER_PID in proclock run's environment
// is recorded beside the holder, status names it, and the help says so
// (docs/command.md, "The launcher"): a shell user has no other way to learn
// of it.
func TestRunLauncherPID(t *testing.T) {
	t.Parallel()
	if !strings.Contains(runUsage, "PROCLOCK_LAUNCHER_PID") {
		t.Errorf("proclock help run does not name PROCLOCK_LAUNCHER_PID")
	}
	path := filepath.Join(t.TempDir(), "x.lock")
	cmd := proclockCmd(line("run", path, "--", bin, "status", "--json", path))
	cmd.Env = append(cmd.Env, "PROCLOCK_LAUNCHER_PID=4240")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, _ := cmd.Output() // the exit code is checked below
	var st jsonStatus
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("status --json under proclock run: %v; stdout %q, stderr %q", err, out, stderr.String())
	}
	if code := cmd.ProcessState.ExitCode(); code != exitHeld || st.Holder == nil || st.Holder.LauncherPID != 4240 {
		t.Errorf("status --json of the held lock: exit %d, holder %+v; want held, launcherPid 4240", code, st.Holder)
	}
}
