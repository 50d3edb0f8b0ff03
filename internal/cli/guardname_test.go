package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// TestRunKeepsUsersFileAtGuard: a user's file at the guard's name
// (PATH.stale), beside a lock that is taken only under the guard (a dead
// holder's stamp, for either mechanism; a dead SQLite holder's mark, for
// SQLite), is never removed: run fails plainly naming it, and status says
// the same, "not a lock file (on app.lock.stale)", exit 2, where it used
// to say "stale, free to take".
func TestRunKeepsUsersFileAtGuard(t *testing.T) {
	t.Parallel()
	dead, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatal(err)
	}
	dead.PID, dead.StartTime = locktest.DeadPID(t), 0
	record := lockrec.Record{Format: lockrec.Format, Identity: dead, AcquiredAt: time.Now(), Nonce: "dead"}.Marshal()
	for _, tc := range []struct {
		name, mech string
		stage      func(t *testing.T, lock string)
	}{
		{"a dead stamp", "file", func(t *testing.T, lock string) { write(t, lock, record) }},
		{"a dead stamp", "sqlite", func(t *testing.T, lock string) { write(t, lock, record) }},
		{"a dead mark", "sqlite", func(t *testing.T, lock string) {
			write(t, lock, lockrec.EmptyDatabase())
			write(t, lock+lockrec.MarkSuffix, record)
		}},
	} {
		t.Run(tc.name+"/"+tc.mech, func(t *testing.T) {
			lock := filepath.Join(t.TempDir(), "app.lock")
			tc.stage(t, lock)
			guard := lock + lockrec.GuardSuffix
			body := []byte("notes the user keeps here\n")
			write(t, guard, body)
			before, _ := os.Stat(guard)
			res := runProclock(t, line("run", "-n", "--mechanism", tc.mech, lock, helper("exit", "0"))...)
			if res.code != 2 || !strings.Contains(res.stderr, "not a lock file (on app.lock.stale)") {
				t.Errorf("run: exit %d, want 2 naming app.lock.stale; stderr %q", res.code, res.stderr)
			}
			st := runProclock(t, "status", "--mechanism", tc.mech, lock)
			if st.code != 2 || !strings.Contains(st.stdout, "not a lock file (on app.lock.stale)") {
				t.Errorf("status: exit %d, want 2 naming app.lock.stale; stdout %q", st.code, st.stdout)
			}
			after, err := os.Stat(guard)
			got, _ := os.ReadFile(guard)
			if err != nil || !os.SameFile(before, after) || !bytes.Equal(got, body) {
				t.Fatalf("the user's file at the guard changed: %v, bytes %q", err, got)
			}
		})
	}
}

func write(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestRunNamesTheHoldingMechanism: a torn stamp (a file-mechanism writer's,
// young) is held by an unknown holder of the file mechanism, and run says
// so whichever mechanism it runs with, as status does; it used to name its
// own mechanism when the holder was unknown.
func TestRunNamesTheHoldingMechanism(t *testing.T) {
	t.Parallel()
	lock := filepath.Join(t.TempDir(), "t.lock")
	write(t, lock, []byte(`{"format":"proclo`))
	for _, mech := range []string{"sqlite", "file"} {
		res := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...)
		if res.code != 1 || !strings.Contains(res.stderr, "unknown holder") || !strings.Contains(res.stderr, "mechanism file") {
			t.Errorf("run --mechanism %s beside a torn stamp: exit %d, want 1 naming an unknown holder, mechanism file; stderr %q", mech, res.code, res.stderr)
		}
		st := runProclock(t, "status", "--mechanism", mech, lock)
		if st.code != 1 || !strings.Contains(st.stdout, "mechanism file") {
			t.Errorf("status --mechanism %s beside a torn stamp: exit %d, want 1, mechanism file; stdout %q", mech, st.code, st.stdout)
		}
	}
}

// TestDirectoryAtGuardNamed: a directory at the guard's name (PATH.stale)
// beside a dead holder's stamp is named as what failed, by run and by
// status, for either mechanism; both used to say the lock file itself "is
// a directory", with flock(1)'s hint for a directory at PATH.
func TestDirectoryAtGuardNamed(t *testing.T) {
	t.Parallel()
	dead, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatal(err)
	}
	dead.PID, dead.StartTime = locktest.DeadPID(t), 0
	record := lockrec.Record{Format: lockrec.Format, Identity: dead, AcquiredAt: time.Now(), Nonce: "dead"}.Marshal()
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			lock := filepath.Join(t.TempDir(), "app.lock")
			write(t, lock, record)
			if err := os.Mkdir(lock+lockrec.GuardSuffix, 0o755); err != nil {
				t.Fatal(err)
			}
			const want = "is a directory (on app.lock.stale)"
			res := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...)
			if res.code != 2 || !strings.Contains(res.stderr, want) || strings.Contains(res.stderr, "flock(1)") {
				t.Errorf("run: exit %d, want 2 saying %q; stderr %q", res.code, want, res.stderr)
			}
			st := runProclock(t, "status", "--mechanism", mech, lock)
			if st.code != 2 || !strings.Contains(st.stderr, want) || strings.Contains(st.stderr, "flock(1)") {
				t.Errorf("status: exit %d, want 2 saying %q; stderr %q", st.code, want, st.stderr)
			}
		})
	}
}
