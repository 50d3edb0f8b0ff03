package main

import (
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
)

// The modes of the files guests create (review finding 3: wazero creates
// every file 0600, whatever the umask), and what a group of users does
// about hosts that proclock does not control (docs/wasm.md, "Files and
// modes").

// withUmask is k run under umask (octal, as the shell takes it).
func withUmask(k kind, umask string) kind {
	inner := k.command
	k.command = func(dir string, args ...string) *exec.Cmd {
		c := inner(dir, args...)
		return exec.Command("/bin/sh", append([]string{"-c", "umask " + umask + ` && exec "$@"`, "sh", c.Path}, c.Args[1:]...)...)
	}
	return k
}

// asUser is k run as uid, with gid its only group (setpriv).
func asUser(k kind, uid, gid int) kind {
	inner := k.command
	k.command = func(dir string, args ...string) *exec.Cmd {
		c := inner(dir, args...)
		return exec.Command("setpriv", append([]string{"--reuid", strconv.Itoa(uid), "--regid", strconv.Itoa(gid), "--clear-groups", c.Path}, c.Args[1:]...)...)
	}
	return k
}

// modeOf is the permission bits of the file at path.
func modeOf(t *testing.T, path string) fs.FileMode {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestGuestFileModes: while a guest holds a lock it created, the lock
// file's mode is what the kind gives: under wasmhost (its lockFS) and
// Node.js, a native proclock's, lockrec.FileMode (0664) less the umask;
// under wazero's CLI, 0600 whatever the umask (wazero's path_open). Before
// lockFS, wasmhost gave 0600 too.
func TestGuestFileModes(t *testing.T) {
	if createMode != lockrec.FileMode {
		t.Fatalf("wasmhost creates with %v, proclock with %v", createMode, lockrec.FileMode)
	}
	ks := []struct {
		k     kind
		fixed fs.FileMode // the mode whatever the umask; 0: FileMode less the umask
	}{{nativeKind("file"), 0}, {wasip1Kind, 0}, {jsKind, 0}}
	if _, err := exec.LookPath("wazero"); err == nil {
		ks = append(ks, struct {
			k     kind
			fixed fs.FileMode
		}{wazeroCLI(t), 0o600})
	} else {
		t.Log("wazero is not installed: its CLI's mode is not measured (go install github.com/tetratelabs/wazero/cmd/wazero@v1.12.0)")
	}
	for _, c := range ks {
		for _, umask := range []fs.FileMode{0o022, 0o002, 0o077} {
			t.Run(fmt.Sprintf("%s/umask %03o", c.k.name, umask), func(t *testing.T) {
				ctx, dir := testContext(t), t.TempDir()
				path := filepath.Join(dir, "x.lock")
				a := start(t, withUmask(c.k, fmt.Sprintf("%03o", umask)), dir, "-hold", path)
				a.expect(ctx, "holds")
				want := lockrec.FileMode &^ umask
				if c.fixed != 0 {
					want = c.fixed
				}
				if got := modeOf(t, path); got != want {
					t.Errorf("%s under umask %03o created the lock file %v; want %v", c.k.name, umask, got, want)
				}
				a.stdin.Close()
				a.expect(ctx, "released")
			})
		}
	}
}

// groupDir makes a directory that group gid can write, setgid, as
// docs/security.md's "A lock shared by a group" has it, under a parent
// others can enter; it skips the test where that cannot be done (not
// root, no setpriv).
func groupDir(t *testing.T, gid int) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("not root: cannot run agents as other users")
	}
	if _, err := exec.LookPath("setpriv"); err != nil {
		t.Skip("setpriv is missing: cannot run agents as other users")
	}
	parent, err := os.MkdirTemp("", "wasmhost-group-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(parent) })
	dir := filepath.Join(parent, "g")
	for _, step := range []error{os.Chmod(parent, 0o755), os.Mkdir(dir, 0o775), os.Chown(dir, 0, gid), os.Chmod(dir, 0o2775|fs.ModeSetgid)} {
		if step != nil {
			t.Fatal(step)
		}
	}
	// The programs, for the other users.
	if err := os.Chmod(bin.dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGroupTakesAfterGuest: a guest under wasmhost, run as one user of a
// group with umask 002, creates the lock file 0664 in the group's setgid
// directory; another user of the group is told it is held while the guest
// holds, and takes it once the guest's host is SIGKILLed (the guest never
// released), natively on either mechanism. Before lockFS, the file was
// 0600, and the second user got "permission denied" (exit 2) both times,
// for good.
func TestGroupTakesAfterGuest(t *testing.T) {
	const gid, first, second = 3000, 1001, 1002
	dir := groupDir(t, gid)
	if bin.err != nil {
		t.Fatal(bin.err)
	}
	// The first user's own cache (bin.cache is root's), with what
	// bin.cache holds: the guest compiled by the tests before.
	cache := filepath.Join(filepath.Dir(dir), "cache")
	if err := copyTree(bin.cache, cache, first, gid); err != nil {
		t.Fatal(err)
	}
	guest := kind{name: "wasip1 as uid 1001", mech: "file", command: func(lockDir string, args ...string) *exec.Cmd {
		return exec.Command(filepath.Join(bin.dir, "wasmhost"), append([]string{"-cache", cache, filepath.Join(bin.dir, "guest.wasm"), lockDir}, args...)...)
	}}
	guest = withUmask(asUser(guest, first, gid), "002")
	for _, mech := range []string{"sqlite", "file"} {
		t.Run("second user's mechanism "+mech, func(t *testing.T) {
			ctx, path := testContext(t), filepath.Join(dir, mech+".lock")
			a := start(t, guest, dir, "-hold", path)
			a.expect(ctx, "holds")
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			st := fi.Sys().(*syscall.Stat_t)
			if fi.Mode().Perm() != 0o664 || st.Uid != first || st.Gid != gid {
				t.Errorf("guest's lock file: %v uid %d gid %d; want -rw-rw-r-- uid %d gid %d", fi.Mode().Perm(), st.Uid, st.Gid, first, gid)
			}
			second := func() (int, string) {
				cmd := exec.CommandContext(ctx, "setpriv", "--reuid", strconv.Itoa(second), "--regid", strconv.Itoa(gid), "--clear-groups",
					"/bin/sh", "-c", `umask 002 && exec "$@"`, "sh", filepath.Join(bin.dir, "proclock"), "run", "-n", "--mechanism", mech, path, "--", "true")
				out, err := cmd.CombinedOutput()
				if ee, ok := err.(*exec.ExitError); ok {
					return ee.ExitCode(), string(out)
				} else if err != nil {
					t.Fatal(err)
				}
				return 0, string(out)
			}
			if code, out := second(); code != 1 || !strings.Contains(out, "pid "+strconv.Itoa(a.pid())) {
				t.Errorf("second user while the guest holds: exit %d, %q; want 1, held by pid %d", code, out, a.pid())
			}
			a.cmd.Process.Kill()
			a.exit()
			if code, out := second(); code != 0 {
				t.Errorf("second user after the guest's host was killed: exit %d, %q; want 0 (the lock taken)", code, out)
			}
		})
	}
}

// precreated are the files a group's administrator can put at a lock's
// path beforehand, and what each kind makes of one: taken as free at once
// (the empty database that a native proclock leaves, and an empty file
// older than stamplock.UnstampedWindow), or, for a fresh empty file, free
// to SQLite but held (holder unknown) by the file mechanism for 30 s (a
// stamp on its way: docs/protocol.md).
func TestPrecreatedLockFile(t *testing.T) {
	ks := kinds("auto")
	ks = append(ks, nativeKind("file"))
	if _, err := exec.LookPath("wazero"); err == nil {
		ks = append(ks, wazeroCLI(t))
	}
	for _, pre := range []struct {
		name   string
		make   func(t *testing.T, path string)
		fileOK bool // taken by the file mechanism too
	}{
		{"empty database, by proclock run", func(t *testing.T, path string) {
			out, err := exec.Command("/bin/sh", "-c", `umask 002 && exec "$@"`, "sh", filepath.Join(bin.dir, "proclock"), "run", path, "--", "true").CombinedOutput()
			if err != nil {
				t.Fatalf("proclock run: %v: %s", err, out)
			}
			if fi, err := os.Stat(path); err != nil || fi.Size() != lockrec.DatabaseSize {
				t.Fatalf("proclock run left %v, %v; want the empty database", fi, err)
			}
		}, true},
		{"empty file, a minute old", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o664); err != nil {
				t.Fatal(err)
			}
			old := time.Now().Add(-time.Minute)
			if err := os.Chtimes(path, old, old); err != nil {
				t.Fatal(err)
			}
		}, true},
		{"empty file, fresh", func(t *testing.T, path string) {
			if err := os.WriteFile(path, nil, 0o664); err != nil {
				t.Fatal(err)
			}
		}, false},
	} {
		for _, k := range ks {
			t.Run(pre.name+"/"+k.name, func(t *testing.T) {
				if bin.err != nil {
					t.Fatal(bin.err)
				}
				ctx, dir := testContext(t), t.TempDir()
				path := filepath.Join(dir, "x.lock")
				pre.make(t, path)
				if err := os.Chmod(path, 0o664); err != nil {
					t.Fatal(err)
				}
				a := start(t, k, dir, "-hold", path)
				if k.mech == "file" && !pre.fileOK {
					if kv := a.expect(ctx, "held"); kv["pid"] != "0" {
						t.Errorf("%s named pid %s for a fresh empty file; want 0 (unknown)", k.name, kv["pid"])
					}
					return
				}
				a.expect(ctx, "holds")
				// Taken in place: the file keeps the mode it was given,
				// whatever mode the kind creates with.
				if got := modeOf(t, path); got != 0o664 {
					t.Errorf("%s holds the pre-created file, now %v; want it kept -rw-rw-r--", k.name, got)
				}
				a.stdin.Close()
				a.expect(ctx, "released")
			})
		}
	}
}

// copyTree copies the directory src, if there is one, to dst, mode 0700,
// its files 0600, all owned by uid and gid; without src, dst is empty.
func copyTree(src, dst string, uid, gid int) error {
	if err := os.Mkdir(dst, 0o700); err != nil {
		return err
	}
	if err := os.Chown(dst, uid, gid); err != nil {
		return err
	}
	if _, err := os.Stat(src); os.IsNotExist(err) {
		return nil
	}
	return filepath.WalkDir(src, func(path string, d fs.DirEntry, err error) error {
		if err != nil || path == src {
			return err
		}
		rel, err := filepath.Rel(src, path)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			err = os.Mkdir(to, 0o700)
		} else {
			var b []byte
			if b, err = os.ReadFile(path); err == nil {
				err = os.WriteFile(to, b, 0o600)
			}
		}
		if err != nil {
			return err
		}
		return os.Chown(to, uid, gid)
	})
}
