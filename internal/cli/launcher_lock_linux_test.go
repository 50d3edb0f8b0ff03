package cli

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

// TestFailedRunLeavesNoLock: a run that takes the lock's kernel lock and
// then fails (here: a directory at the mark's name) leaves the lock free
// once it has exited. The guard's launcher, forked while proclock takes
// the lock, holds a copy of the lock file's descriptor until it executes
// the shell; proclock used to exit first, and on a loaded machine status
// then found the lock "held by an unknown holder" (issue 29, item 13).
// strace holds every execve back, which makes that window 1.5 s long.
func TestFailedRunLeavesNoLock(t *testing.T) {
	strace, err := exec.LookPath("strace")
	if err != nil {
		t.Skip("no strace here to hold the launcher back")
	}
	dir := t.TempDir()
	lock := filepath.Join(dir, "x.lock")
	if res := runProclock(t, line("run", "--mechanism", "sqlite", lock, helper("exit", "0"))...); res.code != 0 {
		t.Fatalf("the first run: exit %d; stderr: %s", res.code, res.stderr)
	}
	if err := os.Mkdir(lock+".holder", 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(strace, "-f", "-qq", "-o", "/dev/null", "-e", "trace=execve", "-e", "inject=execve:delay_enter=1500000",
		"/bin/sh", "-c", `"$0" "$@"; echo "exited $?"`, bin, "run", "-n", "--mechanism", "sqlite", lock, "--", "true")
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	said, err := bufio.NewReader(out).ReadString('\n')
	if err != nil || strings.TrimSpace(said) != "exited 2" {
		cmd.Process.Kill()
		t.Fatalf("run under strace: %q, %v, want exit 2; stderr: %s", said, err, stderr.String())
	}
	f, err := os.OpenFile(lock, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	whole := unix.Flock_t{Type: unix.F_WRLCK}
	if err := unix.FcntlFlock(f.Fd(), unix.F_OFD_SETLK, &whole); err != nil {
		t.Errorf("the lock file is still locked after the failed run exited: %v", err)
	}
}
