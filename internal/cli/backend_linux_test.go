package cli

import (
	"bufio"
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// fakeRun is the fake-backend proclock, its stdout piped to the test,
// stderr to a buffer.
type fakeRun struct {
	cmd    *exec.Cmd
	lines  *bufio.Reader
	stderr bytes.Buffer
	once   sync.Once
}

func startFake(t *testing.T, args ...string) *fakeRun {
	t.Helper()
	cmd := fakeRole.Command(args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &fakeRun{cmd: cmd, lines: bufio.NewReader(out)}
	cmd.Stderr = &r.stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A run that would hang is killed: its test fails on the output
	// missing, not at the suite's timeout.
	hung := time.AfterFunc(deadline, func() { cmd.Process.Kill() })
	t.Cleanup(func() {
		hung.Stop()
		cmd.Process.Kill()
		r.wait()
	})
	return r
}

// line reads COMMAND's next line, failing t at EOF.
func (r *fakeRun) line(t *testing.T) string {
	t.Helper()
	s, err := r.lines.ReadString('\n')
	if err != nil {
		t.Fatalf("reading COMMAND's output: %q, %v; stderr: %s", s, err, r.stderr.String())
	}
	return strings.TrimSpace(s)
}

// wait waits for the fake proclock to exit and returns its exit code.
func (r *fakeRun) wait() int {
	r.once.Do(func() { r.cmd.Wait() })
	return r.cmd.ProcessState.ExitCode()
}

// groupAlive reports whether a process of group pgid is alive (a zombie
// is not: it has done all it will do).
func groupAlive(t *testing.T, pgid int) bool {
	t.Helper()
	stats, _ := filepath.Glob("/proc/[0-9]*/stat")
	for _, p := range stats {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
		if len(f) > 2 && f[2] == strconv.Itoa(pgid) && f[0] != "Z" && f[0] != "X" {
			return true
		}
	}
	return false
}

// stubborn is a COMMAND whose group outlives a SIGTERM: a shell that
// prints "term" for it and goes on, and a grandchild that ignores it.
// It prints "ready PGID" first.
var stubborn = []string{"/bin/sh", "-c", `trap 'echo term' TERM; (trap '' TERM; exec sleep 100) & echo ready $$; while :; do wait; done`}

func writeDeadline(t *testing.T, dir string, at time.Time) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, "deadline"), []byte(strconv.FormatInt(at.UnixNano(), 10)), 0o644); err != nil {
		t.Fatal(err)
	}
}

func readyGroup(t *testing.T, r *fakeRun) int {
	t.Helper()
	ready := r.line(t)
	pgid, err := strconv.Atoi(strings.TrimPrefix(ready, "ready "))
	if err != nil {
		t.Fatalf("COMMAND said %q, want ready PGID", ready)
	}
	return pgid
}

// TestLossStopsGroupBeforeDeadline: a lock whose deadline comes near
// without a renewal gets COMMAND's group SIGTERM the grace before the
// deadline, and SIGKILL at it; the grandchild that ignores SIGTERM is
// dead when proclock exits, with exitLost. Without the loss stop, COMMAND
// runs on (the test times out at its deadline).
func TestLossStopsGroupBeforeDeadline(t *testing.T) {
	dir := t.TempDir()
	grace := 400 * time.Millisecond
	// The deadline is set before the lock is taken: a held lock's
	// deadline only moves on (Held.Deadline); the renewals that would
	// move it stop at once here.
	deadline := time.Now().Add(2500 * time.Millisecond)
	writeDeadline(t, dir, deadline)
	r := startFake(t, append([]string{"run", "--grace", grace.String(), "fake:" + dir, "--"}, stubborn...)...)
	pgid := readyGroup(t, r)
	if got := r.line(t); got != "term" {
		t.Fatalf("COMMAND said %q, want term", got)
	}
	termAt := time.Now()
	if early := deadline.Add(-grace).Sub(termAt); early > 50*time.Millisecond {
		t.Errorf("SIGTERM %v before the grace began", early)
	}
	if termAt.After(deadline) {
		t.Errorf("SIGTERM %v after the deadline", termAt.Sub(deadline))
	}
	code := r.wait()
	if code != exitLost {
		t.Errorf("exit %d, want %d; stderr: %s", code, exitLost, r.stderr.String())
	}
	if groupAlive(t, pgid) {
		t.Errorf("COMMAND's group %d lives on after proclock exited", pgid)
	}
	if !strings.Contains(r.stderr.String(), "proclock: lost fake:"+dir+" while COMMAND ran") {
		t.Errorf("stderr %q does not tell the loss", r.stderr.String())
	}
	if _, err := os.Stat(filepath.Join(dir, "held")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the lock was not released: %v", err)
	}
}

// TestLossByEventGivesGrace: a loss told by an event (a key deleted)
// gets SIGTERM at once and SIGKILL after the grace.
func TestLossByEventGivesGrace(t *testing.T) {
	dir := t.TempDir()
	grace := 300 * time.Millisecond
	r := startFake(t, append([]string{"run", "--grace", grace.String(), "fake:" + dir, "--"}, stubborn...)...)
	pgid := readyGroup(t, r)
	lostAt := time.Now()
	if err := os.WriteFile(filepath.Join(dir, "lose"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if got := r.line(t); got != "term" {
		t.Fatalf("COMMAND said %q, want term", got)
	}
	code := r.wait()
	if took := time.Since(lostAt); took < grace {
		t.Errorf("proclock exited %v after the loss, within the grace %v", took, grace)
	}
	if code != exitLost || groupAlive(t, pgid) {
		t.Errorf("exit %d (want %d), group alive %v; stderr: %s", code, exitLost, groupAlive(t, pgid), r.stderr.String())
	}
}

// TestLossPastDeadlineKillsAtOnce: a proclock that finds its deadline
// already past (as one resumed from SIGSTOP does) sends SIGKILL at once:
// no SIGTERM, no grace.
func TestLossPastDeadlineKillsAtOnce(t *testing.T) {
	dir := t.TempDir()
	r := startFake(t, append([]string{"run", "--grace", "5s", "--fake-ttl", "60", "fake:" + dir, "--"}, stubborn...)...)
	pgid := readyGroup(t, r)
	began := time.Now()
	writeDeadline(t, dir, began.Add(-time.Second))
	code := r.wait()
	if took := time.Since(began); took > 3*time.Second {
		t.Errorf("proclock took %v to stop COMMAND, as if it gave the 5s grace", took)
	}
	if rest, _ := r.lines.ReadString('\n'); rest != "" {
		t.Errorf("COMMAND said %q: it got a SIGTERM", rest)
	}
	if code != exitLost || groupAlive(t, pgid) {
		t.Errorf("exit %d (want %d), group alive %v; stderr: %s", code, exitLost, groupAlive(t, pgid), r.stderr.String())
	}
}

// TestBackendExitCodes: held, a wait that ran out, an unreachable
// server, -E, a grace the TTL cannot afford, and a backend's option on a
// host PATH each give their documented code; COMMAND's own passes
// through.
func TestBackendExitCodes(t *testing.T) {
	held := t.TempDir()
	if err := os.WriteFile(filepath.Join(held, "held"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	free := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want int
	}{
		{"COMMAND's status", []string{"run", "fake:" + free, "--", "/bin/sh", "-c", "exit 7"}, 7},
		{"held", []string{"run", "-n", "fake:" + held, "--", "true"}, exitHeld},
		{"held -E", []string{"run", "-n", "-E", "75", "fake:" + held, "--", "true"}, 75},
		{"timed out", []string{"run", "-w", "100ms", "fake:" + held, "--", "true"}, exitTimedOut},
		{"timed out -E", []string{"run", "-w", "100ms", "-E", "1", "fake:" + held, "--", "true"}, 1},
		{"unreachable", []string{"run", "fake:unreachable", "--", "true"}, exitUnreachable},
		{"status unreachable", []string{"status", "fake:unreachable"}, exitUnreachable},
		{"status held", []string{"status", "fake:" + held}, exitHeld},
		{"status free", []string{"status", "fake:" + free}, exitOK},
		{"grace too long", []string{"run", "--grace", "4s", "fake:" + free, "--", "true"}, exitUsage},
		{"backend option on a host PATH", []string{"run", "--fake-ttl", "5", filepath.Join(free, "x.lock"), "--", "true"}, exitUsage},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := startFake(t, tc.args...)
			if code := r.wait(); code != tc.want {
				t.Errorf("proclock %q: exit %d, want %d; stderr: %s", tc.args, code, tc.want, r.stderr.String())
			}
		})
	}
}

// TestBackendEnvInnermost: COMMAND gets the lock's variables after the
// ones it inherits: a nested run shows the inner lock's fence.
func TestBackendEnvInnermost(t *testing.T) {
	outer, inner := t.TempDir(), t.TempDir()
	os.WriteFile(filepath.Join(outer, "fence"), []byte("11"), 0o644)
	os.WriteFile(filepath.Join(inner, "fence"), []byte("42"), 0o644)
	nested := fakeRole.Argv("run", "fake:"+inner, "--", "/bin/sh", "-c", `echo "$PROCLOCK_FENCE"`)
	r := startFake(t, append([]string{"run", "fake:" + outer, "--"}, nested...)...)
	if got := r.line(t); got != "42" {
		t.Errorf("nested COMMAND sees PROCLOCK_FENCE=%q, want the inner 42", got)
	}
	if code := r.wait(); code != 0 {
		t.Errorf("exit %d; stderr: %s", code, r.stderr.String())
	}
}

// TestBackendSignalWhileHolding: SIGTERM to proclock reaches COMMAND
// through the same relay as before, and is no loss.
func TestBackendSignalWhileHolding(t *testing.T) {
	dir := t.TempDir()
	r := startFake(t, "run", "fake:"+dir, "--", "/bin/sh", "-c", `echo ready; exec sleep 100`)
	if got := r.line(t); got != "ready" {
		t.Fatalf("COMMAND said %q", got)
	}
	r.cmd.Process.Signal(syscall.SIGTERM)
	if code := r.wait(); code != 128+int(syscall.SIGTERM) {
		t.Errorf("exit %d, want %d; stderr: %s", code, 128+int(syscall.SIGTERM), r.stderr.String())
	}
}

// TestHostLossStopsGroup: a host lock whose file is removed while COMMAND
// runs is lost; run stops COMMAND's group (SIGTERM, then SIGKILL after
// the grace) and exits 125.
func TestHostLossStopsGroup(t *testing.T) {
	lock := filepath.Join(t.TempDir(), "x.lock")
	cmd := proclockCmd(append([]string{"run", "--mechanism", "file", "--grace", "300ms", lock, "--"}, stubborn...))
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
	pgid := readyGroup(t, r)
	if err := os.Remove(lock); err != nil {
		t.Fatal(err)
	}
	if got := r.line(t); got != "term" {
		t.Fatalf("COMMAND said %q, want term", got)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != exitLost || groupAlive(t, pgid) {
		t.Errorf("exit %d (want %d), group alive %v; stderr: %s", code, exitLost, groupAlive(t, pgid), stderr.String())
	}
}
