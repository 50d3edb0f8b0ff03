package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"
)

// skipWithoutUnshare skips t where unshare(1) cannot make the namespaces
// args ask for (CAP_SYS_ADMIN is needed, and linux 5.6 for a time
// namespace).
func skipWithoutUnshare(t *testing.T, args ...string) {
	t.Helper()
	out, err := exec.Command("unshare", append(args, "true")...).CombinedOutput()
	if err != nil {
		t.Skipf("unshare %s cannot run here (CAP_SYS_ADMIN, and linux 5.6 for a time namespace): %v: %s",
			strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
}

// TestStatusNamespaces: status names a holder in another time or pid
// namespace of this host as such, in its text and in --json, and tells its
// process start on this clock whatever the holder's clock.
func TestStatusNamespaces(t *testing.T) {
	for _, mech := range mechanisms {
		t.Run("time/"+mech, func(t *testing.T) {
			timens := []string{"--time", "--boottime", "100000"}
			skipWithoutUnshare(t, timens...)
			lock := t.TempDir() + "/x.lock"
			holder := startShell(t, line("unshare", timens, bin, "run", "--mechanism", mech, lock, helper("hold"))...)
			holder.expectLine("started")

			res := runProclock(t, "status", lock)
			want := fmt.Sprintf(": held by pid %d on ", holder.cmd.Process.Pid)
			note := "(in another time namespace, boot clock 27h46m40s ahead)"
			if res.code != 1 || !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, note) {
				t.Errorf("status: exit %d, %q; want 1, %q and %q", res.code, res.stdout, want, note)
			}
			st := statusJSON(t, lock)
			if st.State != "held" || st.Holder == nil || !st.Holder.OtherTimeNamespace || st.Holder.OtherPIDNamespace ||
				st.Holder.BootOffset != 100000e9 || st.Holder.TimeNamespace == 0 {
				t.Fatalf("status --json: %+v; want held, the holder in another time namespace, boot clock 1e14 ns ahead", st.Holder)
			}
			// Its process start is on this clock: shortly before it took
			// the lock (not a day and more off), read from outside the
			// namespace and from another one.
			checkStart := func(where string, st statusOut) {
				t.Helper()
				if ps := st.Holder.ProcessStart; ps.IsZero() || ps.After(st.AcquiredAt.Add(time.Second)) || ps.Before(st.AcquiredAt.Add(-time.Hour)) {
					t.Errorf("status --json %s: processStart %v, want shortly before acquiredAt %v", where, ps, st.AcquiredAt)
				}
			}
			checkStart("outside", st)
			out, _ := exec.Command("unshare", "--time", "--boottime", "50000", bin, "status", "--json", lock).Output()
			var inside statusOut
			json.Unmarshal(out, &inside)
			if inside.Holder == nil || !inside.Holder.OtherTimeNamespace {
				t.Errorf("status --json in another time namespace: %s; want the holder in another one", out)
			} else {
				checkStart("in a namespace of its own", inside)
			}
		})
		t.Run("pid/"+mech, func(t *testing.T) {
			pidns := []string{"--pid", "--fork", "--kill-child", "--mount-proc"}
			skipWithoutUnshare(t, pidns...)
			lock := t.TempDir() + "/x.lock"
			holder := startShell(t, line("unshare", pidns, bin, "run", "--mechanism", mech, lock, helper("hold"))...)
			holder.expectLine("started")

			res := runProclock(t, "status", lock)
			if want := ": held by pid 1 on "; res.code != 1 || !strings.Contains(res.stdout, want) || !strings.Contains(res.stdout, "(in another pid namespace)") {
				t.Errorf("status: exit %d, %q; want 1, %q and (in another pid namespace)", res.code, res.stdout, want)
			}
			if st := statusJSON(t, lock); st.Holder == nil || st.Holder.PID != 1 || !st.Holder.OtherPIDNamespace || st.Holder.OtherTimeNamespace {
				t.Errorf("status --json: %+v; want held by pid 1 of another pid namespace", st.Holder)
			}

			// Killed: SQLite's lock is the kernel's, free at once; a lock
			// file of another pid namespace cannot be judged from here,
			// and stays held, its holder named as of that namespace.
			// unshare's death kills its child (--kill-child), a moment
			// later: the pipe's EOF says every process that had it (the
			// proclock inside, COMMAND) is gone.
			holder.cmd.Process.Signal(syscall.SIGKILL)
			holder.wait()
			holder.stdout.SetReadDeadline(time.Now().Add(deadline))
			if _, err := io.ReadAll(holder.stdout); err != nil {
				t.Fatalf("the holder's stdout after its death: %v", err)
			}
			res = runProclock(t, "status", lock)
			switch {
			case mech == "sqlite" && (res.code != 0 || !strings.Contains(res.stdout, ": free")):
				t.Errorf("status, the SQLite holder killed: exit %d, %q; want 0, free", res.code, res.stdout)
			case mech == "file" && (res.code != 1 || !strings.Contains(res.stdout, "held by pid 1 on ") || !strings.Contains(res.stdout, "(in another pid namespace)")):
				t.Errorf("status, the file holder killed: exit %d, %q; want 1, held by pid 1 of another pid namespace", res.code, res.stdout)
			}
		})
	}
}
