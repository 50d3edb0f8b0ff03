package cli

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// TestStatusAgreesWithRunInEveryState (issue 29, item 4): for each state
// the red team found them apart in, status and run -n, with either
// mechanism, give the same answer: held (1) for both, free (0: status
// free or stale, run runs COMMAND) for both, or the same error (2).
func TestStatusAgreesWithRunInEveryState(t *testing.T) {
	t.Parallel()
	dead, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatal(err)
	}
	dead.PID, dead.StartTime = locktest.DeadPID(t), 0
	deadStamp := lockrec.Record{Format: lockrec.Format, Identity: dead, AcquiredAt: time.Now(), Nonce: "dead"}.Marshal()
	ahead := func(t *testing.T, name string) {
		at := time.Now().Add(time.Hour) // a clock stepped back an hour since
		if err := os.Chtimes(name, at, at); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		lock  string // the lock's base name
		stage func(t *testing.T, lock string)
		want  int // both's exit code
	}{
		{"an empty mark beside a free lock", "x.lock", func(t *testing.T, lock string) {
			write(t, lock, lockrec.EmptyDatabase())
			write(t, lock+lockrec.MarkSuffix, nil)
		}, 1},
		{"a dead stamp beside an empty guard an hour ahead", "x.lock", func(t *testing.T, lock string) {
			write(t, lock, deadStamp)
			write(t, lock+lockrec.GuardSuffix, nil)
			ahead(t, lock+lockrec.GuardSuffix)
		}, 0},
		{"a dead stamp beside a young empty guard", "x.lock", func(t *testing.T, lock string) {
			write(t, lock, deadStamp)
			write(t, lock+lockrec.GuardSuffix, nil)
		}, 1},
		{"an empty lock file an hour ahead", "x.lock", func(t *testing.T, lock string) {
			write(t, lock, nil)
			ahead(t, lock)
		}, 0},
		{"a lock named as the mark of a held lock", "x.lock.holder", func(t *testing.T, lock string) {
			holdLock(t, "run", filepath.Join(filepath.Dir(lock), "x.lock"))
		}, 2},
		{"a lock named as a guard", "x.lock.stale", func(t *testing.T, lock string) {}, 2},
	} {
		for _, mech := range mechanisms {
			t.Run(tc.name+"/"+mech, func(t *testing.T) {
				lock := filepath.Join(t.TempDir(), tc.lock)
				tc.stage(t, lock)
				st := runProclock(t, "status", "--mechanism", mech, lock)
				run := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...)
				if st.code != tc.want || run.code != tc.want {
					t.Errorf("status: exit %d, run -n: exit %d; want both %d\nstatus: %s%s\nrun: %s", st.code, run.code, tc.want, st.stdout, st.stderr, run.stderr)
				}
				stCause, _ := strings.CutPrefix(st.stderr, "proclock: inspect")
				runCause, _ := strings.CutPrefix(run.stderr, "proclock: acquire")
				if tc.want == 2 && stCause != runCause {
					t.Errorf("status and run give other causes:\n%s%s", st.stderr, run.stderr)
				}
			})
		}
	}
}
