package proclock_test

import (
	"context"
	"errors"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// flock(1) and the SQLite mechanism on one file exclude each other, both
// ways, and a holder killed with SIGKILL lets flock(1) in at once
// (docs/design.md, "flock(1)").

// flockBinary is flock(1), or a skip.
func flockBinary(t *testing.T) string {
	t.Helper()
	bin, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) is not installed (util-linux)")
	}
	return bin
}

// flockTry runs flock -n on path; it reports whether flock(1) got the lock.
func flockTry(t *testing.T, bin, path string) bool {
	t.Helper()
	err := exec.Command(bin, "-n", path, "true").Run()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok && ee.ExitCode() == 1 {
		return false
	}
	if err != nil {
		t.Fatalf("flock -n %s true: %v", path, err)
	}
	return true
}

// flockHold starts flock(1) holding path until the returned function runs.
func flockHold(t *testing.T, bin, path string) (release func()) {
	t.Helper()
	c := locktest.Start(t, exec.Command(bin, "-n", path, "sh", "-c", "echo locked; exec cat"))
	if line, _ := c.Line(); line != "locked" {
		t.Fatalf("flock(1) said %q; want it to hold the lock", line)
	}
	return func() { c.End() }
}

func TestFlockExcludesSQLite(t *testing.T) {
	bin := flockBinary(t)
	ctx := context.Background()
	p := nativePlatform(proclock.MechanismSQLite)
	for _, remove := range []bool{false, true} {
		t.Run("remove="+strconv.FormatBool(remove), func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "x.lock")
			opts := proclock.Options{RemoveOnRelease: remove}

			// flock(1) first: proclock reads it as held, holder unknown.
			release := flockHold(t, bin, path)
			_, err := proclock.Acquire(ctx, p, path, opts)
			held, ok := errors.AsType[*proclock.HeldError](err)
			if !ok || held.Holder != nil || held.Reason != "a flock(2) lock" {
				t.Fatalf("Acquire while flock(1) holds: %v; want held, holder unknown: a flock(2) lock", err)
			}
			if !strings.Contains(err.Error(), "a flock(2) lock") {
				t.Errorf("held error %q does not say a flock(2) lock holds it", err)
			}
			st, err := proclock.Inspect(ctx, p, path)
			if err != nil || st.State != proclock.StateHeld || st.Reason != "a flock(2) lock" {
				t.Errorf("Inspect while flock(1) holds: %+v, %v; want held by a flock(2) lock", st, err)
			}
			if isHeld, err := proclock.IsHeld(ctx, p, path); err != nil || !isHeld {
				t.Errorf("IsHeld while flock(1) holds: %v, %v; want held", isHeld, err)
			}
			release()

			// proclock first: flock(1) cannot take it.
			l, err := proclock.Acquire(ctx, p, path, opts)
			if err != nil {
				t.Fatalf("Acquire once flock(1) let go: %v", err)
			}
			if flockTry(t, bin, path) {
				t.Errorf("flock(1) took the lock proclock holds")
			}
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
			if !flockTry(t, bin, path) {
				t.Errorf("flock(1) could not take the lock proclock released")
			}
		})
	}
}

// TestFlockDroppedOnKill: the kernel drops the flock(2) lock of a holder
// killed with SIGKILL, as it drops SQLite's.
func TestFlockDroppedOnKill(t *testing.T) {
	bin := flockBinary(t)
	exe := secExe(t)
	path := filepath.Join(secSharedDir(t), "x.lock")
	holder := locktest.Start(t, secCommand(exe, nil, secHoldAndSpawn, string(proclock.MechanismSQLite), path))
	defer holder.Stdin.Close()
	line, _ := holder.Line()
	f := strings.Fields(line)
	if len(f) != 2 || f[0] != "ready" {
		t.Fatalf("holder said %q", line)
	}
	grandchild, _ := strconv.Atoi(f[1])
	defer syscall.Kill(grandchild, syscall.SIGKILL)
	if flockTry(t, bin, path) {
		t.Fatalf("flock(1) took the lock a live proclock holds")
	}
	holder.Cmd.Process.Signal(syscall.SIGKILL)
	holder.Wait()
	if !flockTry(t, bin, path) {
		t.Errorf("flock(1) could not take the lock of a holder killed with SIGKILL (its child still runs)")
	}
}
