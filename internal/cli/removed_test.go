package cli

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

// TestStatusAgreesWithRunOnRemovedFile: a lock whose file was removed
// while a live process holds it. With SQLite, the holder's mark keeps
// everyone out (every Acquire finds it), so status says held, exit 1, as
// run -n does, with either mechanism, and goes on saying so once a run has
// left a new, free lock file at the path; once the holder is gone, both say
// free. With the file mechanism, nothing is left to keep others out:
// status says free and run -n runs COMMAND. (Before, status said free of
// the SQLite holder's lock while run -n said held.) The holder learns of
// the loss through Lock.Lost (TestLostNative), and its run stops COMMAND:
// here a COMMAND that ignores SIGTERM, under a grace of an hour, so that
// the holder lives on (a run ends as soon as COMMAND's group is gone,
// TestLossEndsWithTheGroup).
func TestStatusAgreesWithRunOnRemovedFile(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run(mech, func(t *testing.T) {
			skipFileOnWine(t, mech)
			if runtime.GOOS == "windows" {
				t.Skip("windows: a held lock's file cannot be removed (the holder's handle refuses deletion, a sharing violation), so this case does not arise")
			}
			t.Parallel()
			dir := t.TempDir()
			lock, marker := filepath.Join(dir, "x.lock"), filepath.Join(dir, "ran")
			// The holder is told of the loss and stops COMMAND, which
			// ignores SIGTERM: with an hour's grace the holder holds on
			// for the whole test (run exits once COMMAND has died).
			a := startProclock(t, "run", "--grace", "1h", "--mechanism", mech, lock, "--", "/bin/sh", "-c", `trap '' TERM; echo started; cat >/dev/null`)
			a.expectLine("started")
			if err := os.Remove(lock); err != nil {
				t.Fatal(err)
			}
			wantCode := map[string]int{"sqlite": 1, "file": 0}[mech]
			const said = "lock file removed or replaced while held"
			for round, what := range []string{"the file removed", "a run's free file left at the path"} {
				for _, m := range mechanisms {
					st := runProclock(t, "status", "--mechanism", m, lock)
					if st.code != wantCode {
						t.Errorf("%s holder, %s: status --mechanism %s: exit %d, want %d; stdout: %s", mech, what, m, st.code, wantCode, st.stdout)
					}
					if mech == "sqlite" && m == "sqlite" && !strings.Contains(st.stdout, said) {
						t.Errorf("%s holder, %s: status --mechanism %s does not say %q: %s", mech, what, m, said, st.stdout)
					}
					if mech == "file" {
						continue // run -n would take it: once is enough, below
					}
					res := runProclock(t, line("run", "-n", "--mechanism", m, lock, helper("occupy", marker, marker+".count"))...)
					if res.code != 1 || m == "sqlite" && !strings.Contains(res.stderr, said) {
						t.Errorf("%s holder, %s: run -n --mechanism %s: exit %d, want 1 (held), saying %q as status did; stderr: %s", mech, what, m, res.code, said, res.stderr)
					}
					if _, err := os.Stat(marker + ".count"); err == nil {
						t.Fatalf("%s holder, %s: COMMAND ran beside the holder", mech, what)
					}
				}
				if round == 0 && mech == "sqlite" {
					if _, err := os.Stat(lock); err != nil {
						t.Fatalf("no lock file left by the runs held off: %v", err)
					}
				}
				if mech == "file" {
					break
				}
			}
			if mech == "file" {
				res := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...)
				if res.code != 0 {
					t.Errorf("file holder, its file removed: run -n: exit %d, want 0 as status said; stderr: %s", res.code, res.stderr)
				}
			}
			a.stdin.Close() // COMMAND ends, and with it the run
			a.wait()
			st := runProclock(t, "status", lock)
			res := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...)
			if st.code != 0 || res.code != 0 {
				t.Errorf("%s holder ended: status exit %d, run -n exit %d; want both 0 (free); stdout %s, stderr %s", mech, st.code, res.code, st.stdout, res.stderr)
			}
		})
	}
}
