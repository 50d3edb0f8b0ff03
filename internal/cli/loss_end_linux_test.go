package cli

import (
	"bufio"
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLossEndsWithTheGroup: a loss that lets nobody in (only the SQLite
// holder's mark removed: its kernel lock still keeps others out) stops
// COMMAND, which dies of the SIGTERM; run then exits 125 and lets go of
// the lock at once, not after the grace (10 minutes here: the test's
// bound, far shorter, would end a run that waited it out).
func TestLossEndsWithTheGroup(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	r := holdLock(t, "run", "--mechanism", "sqlite", "--grace", "10m", lock)
	hung := time.AfterFunc(deadline, func() { r.cmd.Process.Kill() })
	defer hung.Stop()
	if err := os.Remove(lock + ".holder"); err != nil {
		t.Fatal(err)
	}
	res := r.wait()
	if res.code != exitLost || !strings.Contains(res.stderr, "SIGTERM, then SIGKILL after") {
		t.Fatalf("exit %d, want %d, with the grace told; stderr: %s", res.code, exitLost, res.stderr)
	}
	if st := runProclock(t, "status", lock); st.code != 0 {
		t.Errorf("status after run exited: exit %d, want 0 (free); stdout: %s", st.code, st.stdout)
	}
}

// TestGraceZeroKillsAtOnce: --grace 0 is taken, and a loss then sends
// SIGKILL at once: COMMAND, which would say "term" for a SIGTERM, says
// nothing, and the line says why.
func TestGraceZeroKillsAtOnce(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	cmd := proclockCmd(append([]string{"run", "--mechanism", "file", "--grace", "0s", lock, "--"}, stubborn...))
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	hung := time.AfterFunc(deadline, func() { cmd.Process.Kill() })
	defer hung.Stop()
	r := &fakeRun{cmd: cmd, lines: bufio.NewReader(out)}
	if !strings.HasPrefix(r.line(t), "ready ") {
		t.Fatalf("COMMAND did not start; stderr: %s", stderr.String())
	}
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	rest, _ := r.lines.ReadString('\n')
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitLost || rest != "" || !strings.Contains(stderr.String(), "SIGKILL at once, as --grace 0 asks") {
		t.Errorf("exit %d (want %d), COMMAND said %q (want nothing: no SIGTERM); stderr: %s", code, exitLost, rest, stderr.String())
	}
}
