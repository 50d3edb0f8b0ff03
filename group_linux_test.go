package proclock_test

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// Two users of one group sharing a lock in a setgid directory (issue 10,
// item 2; docs/security.md, "A lock shared by a group"): real uids, the
// test binary re-executed as each.

// Two users made up for the test, and their group: setuid needs no entry
// in /etc/passwd.
const (
	groupGID  = 64100
	groupUID1 = 64101
	groupUID2 = 64102
)

func groupUser(uid uint32) *syscall.Credential {
	return &syscall.Credential{Uid: uid, Gid: groupGID, Groups: []uint32{groupGID}}
}

// groupDir is a setgid directory that the group may write, as
// docs/security.md says a group lock needs.
func groupDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(secSharedDir(t), "shared")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(dir, 0, groupGID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(dir, 0o2775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	return dir
}

// groupHold starts exe as cred's user holding the lock at path; the lock is
// let go when the returned function runs.
func groupHold(t *testing.T, exe string, cred *syscall.Credential, mech proclock.Mechanism, path string) (pid int, release func()) {
	t.Helper()
	cmd := secCommand(exe, cred, secHoldAndSpawn, string(mech), path)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	holder := locktest.Start(t, cmd)
	line, _ := holder.Line()
	if !strings.HasPrefix(line, "ready ") {
		t.Fatalf("holder as uid %d said %q; stderr: %s", cred.Uid, line, stderr.String())
	}
	released := false
	release = func() {
		if released {
			return
		}
		released = true
		if err := holder.End(); err != nil {
			t.Errorf("holder as uid %d: %v; stderr: %s", cred.Uid, err, stderr.String())
		}
	}
	t.Cleanup(release)
	return holder.Pid(), release
}

// TestGroupSharedLock: with umask 002 (every user of the lock), two users
// of one group take turns at a lock in a setgid directory, whoever created
// its files: held means a held error naming the holder; free means the
// other takes it. Both directions, both mechanisms.
func TestGroupSharedLock(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as two other users")
	}
	defer syscall.Umask(syscall.Umask(0o002))
	exe := secExe(t)
	users := []*syscall.Credential{groupUser(groupUID1), groupUser(groupUID2)}
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			dir := groupDir(t)
			path := filepath.Join(dir, "x.lock")
			for round, first := range []int{0, 1, 0} {
				a, b := users[first], users[1-first]
				pid, release := groupHold(t, exe, a, mech, path)
				r := secTryAs(t, exe, b, mech, path)
				if r.Acquired || !r.Held || r.HolderPID != pid || r.State != proclock.StateHeld || r.InspectPID != pid {
					t.Errorf("round %d: uid %d against uid %d's held lock: %+v; want held by pid %d", round, b.Uid, a.Uid, r, pid)
				}
				release()
				r = secTryAs(t, exe, b, mech, path)
				if !r.Acquired {
					t.Errorf("round %d: uid %d after uid %d let go: %+v; want it taken", round, b.Uid, a.Uid, r)
				}
			}
			groupWantFiles(t, dir, mech)
		})
	}
}

// groupWantFiles checks what the turns left: the SQLite mechanism's
// database, group-writable, of the directory's group; nothing else.
func groupWantFiles(t *testing.T, dir string, mech proclock.Mechanism) {
	t.Helper()
	if mech == proclock.MechanismFile {
		secOnly(t, dir)
		return
	}
	secOnly(t, dir, "x.lock")
	info, err := os.Stat(filepath.Join(dir, "x.lock"))
	if err != nil {
		t.Fatal(err)
	}
	st := info.Sys().(*syscall.Stat_t)
	if info.Mode().Perm() != 0o664 || st.Gid != groupGID {
		t.Errorf("the database is %v, group %d; want -rw-rw-r--, group %d", info.Mode(), st.Gid, groupGID)
	}
}

// TestGroupLockReadOnly: a member of the group whose lock file is not
// group-writable (its creator's umask was 022) still learns whether it is
// held and by whom; when it is free, the error says permission denied and
// how to share the lock.
func TestGroupLockReadOnly(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as two other users")
	}
	defer syscall.Umask(syscall.Umask(0o022))
	exe := secExe(t)
	a, b := groupUser(groupUID1), groupUser(groupUID2)
	path := filepath.Join(groupDir(t), "x.lock")
	mech := proclock.MechanismSQLite // a lock file is removed on release: nothing stays to be read-only
	pid, release := groupHold(t, exe, a, mech, path)
	r := secTryAs(t, exe, b, mech, path)
	if r.Acquired || !r.Held || r.HolderPID != pid || r.InspectPID != pid {
		t.Errorf("uid %d against a held lock it can only read: %+v; want held by pid %d", b.Uid, r, pid)
	}
	release()
	r = secTryAs(t, exe, b, mech, path)
	if r.Acquired || r.Held || !r.Permission || !strings.Contains(r.Err, "group-writable") || strings.Count(r.Err, path) != 1 {
		t.Errorf("uid %d against a free lock it can only read: %+v; want a permission error naming the fix, the path once", b.Uid, r)
	}
	if r.State != proclock.StateFree {
		t.Errorf("Inspect of a free lock it can only read: %q; want free", r.State)
	}
}

// TestGroupLockReadOnlyStale: a holder that died leaves its stamp in a file
// the group may only read (its umask was 022). Another member sees it is
// stale, and its Acquire, on either mechanism, which must rewrite that file
// in place (docs/protocol.md), fails with the same permission error naming
// the fix as for a free lock it can only read; nothing is left changed.
func TestGroupLockReadOnlyStale(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run processes as two other users")
	}
	defer syscall.Umask(syscall.Umask(0o022))
	exe := secExe(t)
	for _, mech := range mechanisms {
		t.Run(string(mech), func(t *testing.T) {
			dir := groupDir(t)
			path := filepath.Join(dir, "x.lock")
			secDeadStamp(t, path)
			if err := os.Chown(path, groupUID1, groupGID); err != nil {
				t.Fatal(err)
			}
			before, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			r := secTryAs(t, exe, groupUser(groupUID2), mech, path)
			if r.Acquired || r.Held || !r.Permission || !strings.Contains(r.Err, "group-writable") || strings.Count(r.Err, path) != 1 {
				t.Errorf("uid %d against a dead holder's stamp it can only read: %+v; want a permission error naming the fix, the path once", groupUID2, r)
			}
			if r.State != proclock.StateStale {
				t.Errorf("Inspect of a dead holder's stamp: %q; want stale", r.State)
			}
			if after, err := os.ReadFile(path); err != nil || string(after) != string(before) {
				t.Errorf("the stamp changed: %q, %v", after, err)
			}
			secOnly(t, dir, "x.lock")
		})
	}
}
