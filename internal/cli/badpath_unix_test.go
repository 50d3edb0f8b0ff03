//go:build unix

package cli

import (
	"encoding/json"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/platform"
)

// badPath is a path proclock cannot lock, made in dir.
type badPath struct {
	name string
	make func(t *testing.T, dir string) string
	// asOther runs proclock as another user (nobody), for whom the path
	// is unreadable, or unwritable.
	asOther bool
	// free: nobody holds the lock, so status says free or stale (exit
	// 0), as its help has it; only taking it needs more than this user
	// may do.
	free bool
	// cause, if set, is what run's cause must contain.
	cause string
}

var badPaths = []badPath{
	{name: "a directory", cause: "is a directory (flock(1) locks a directory itself", make: func(t *testing.T, dir string) string {
		return mkdir(t, filepath.Join(dir, "d"))
	}},
	{name: "a directory, trailing slash", make: func(t *testing.T, dir string) string {
		return mkdir(t, filepath.Join(dir, "d")) + "/"
	}},
	{name: "a device", make: func(t *testing.T, dir string) string { return os.DevNull }},
	{name: "a FIFO", make: func(t *testing.T, dir string) string {
		path := filepath.Join(dir, "fifo")
		if err := syscall.Mkfifo(path, 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}},
	{name: "a socket", make: func(t *testing.T, dir string) string {
		// In a short directory of its own: a socket's path has at most
		// 107 bytes.
		short, err := os.MkdirTemp("", "sock")
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { os.RemoveAll(short) })
		path := filepath.Join(short, "s")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false) // the socket's file stays, with nobody listening
		l.Close()
		return path
	}},
	{name: "a missing parent", make: func(t *testing.T, dir string) string {
		return filepath.Join(dir, "missing", "x.lock")
	}},
	{name: "a parent that is a file", make: func(t *testing.T, dir string) string {
		return filepath.Join(writeFile(t, filepath.Join(dir, "file"), "text\n", 0o644), "x.lock")
	}},
	{name: "a foreign file", make: func(t *testing.T, dir string) string {
		return writeFile(t, filepath.Join(dir, "script.sh"), "#!/bin/sh\necho hi\n", 0o755)
	}},
	{name: "a symlink", cause: "not a lock file: proclock never changes it; lock another path (it is a symlink, to ", make: func(t *testing.T, dir string) string {
		target := writeFile(t, filepath.Join(dir, "target"), "", 0o644)
		path := filepath.Join(dir, "link")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		return path
	}},
	// Said in the first line, not only with -v: flock(1) would create
	// the file it names.
	{name: "a dangling symlink", cause: `(it is a dangling symlink, to "missing.lock", which does not exist: `, make: func(t *testing.T, dir string) string {
		path := filepath.Join(dir, "link")
		if err := os.Symlink("missing.lock", path); err != nil {
			t.Fatal(err)
		}
		return path
	}},
	{name: "an unreadable file", asOther: true, make: func(t *testing.T, dir string) string {
		return writeFile(t, filepath.Join(dir, "private.lock"), "", 0o600)
	}},
	{name: "a symlink loop in the path", make: func(t *testing.T, dir string) string {
		loop := filepath.Join(dir, "loop")
		if err := os.Symlink(loop, loop); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(loop, "x.lock")
	}},
	{name: "a directory this user may not enter", asOther: true, make: func(t *testing.T, dir string) string {
		private := mkdir(t, filepath.Join(dir, "private"))
		if err := os.Chmod(private, 0o700); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(private, "x.lock")
	}},
	{name: "an unwritable directory", asOther: true, free: true, cause: "permission denied", make: func(t *testing.T, dir string) string {
		return filepath.Join(mkdir(t, filepath.Join(dir, "rodir")), "x.lock")
	}},
	{name: "a lock file this user may write, in a directory it may not", asOther: true, free: true, cause: dirCause, make: func(t *testing.T, dir string) string {
		d := mkdir(t, filepath.Join(dir, "rodir"))
		path := writeFile(t, filepath.Join(d, "x.lock"), string(lockrec.EmptyDatabase()), 0o666)
		if err := os.Chmod(path, 0o666); err != nil { // past the umask
			t.Fatal(err)
		}
		return path
	}},
	{name: "a free lock file only readable", asOther: true, free: true, cause: readOnlyCause, make: func(t *testing.T, dir string) string {
		return writeFile(t, filepath.Join(openDir(t, dir), "x.lock"), string(lockrec.EmptyDatabase()), 0o644)
	}},
	{name: "a dead holder's stamp only readable", asOther: true, free: true, cause: readOnlyCause, make: func(t *testing.T, dir string) string {
		id, err := platform.Native().Process.Self()
		if err != nil {
			t.Fatal(err)
		}
		id.PID, id.StartTime = locktest.DeadPID(t), 0
		stamp := lockrec.Record{Format: lockrec.Format, Identity: id, AcquiredAt: time.Now(), Nonce: "dead"}.Marshal()
		return writeFile(t, filepath.Join(openDir(t, dir), "x.lock"), string(stamp), 0o644)
	}},
	{name: "a name over NAME_MAX", make: func(t *testing.T, dir string) string {
		return filepath.Join(dir, strings.Repeat("n", 256))
	}},
	{name: "a path near PATH_MAX", make: func(t *testing.T, dir string) string {
		for len(dir) < 4000 {
			dir = filepath.Join(dir, strings.Repeat("d", 200))
		}
		mkdir(t, dir)
		return filepath.Join(dir, strings.Repeat("n", 4095-len(dir)-1))
	}},
}

// readOnlyCause is what taking a lock whose file this user may only read
// says (docs/security.md, "A lock shared by a group").
const readOnlyCause = "permission denied: this user can read the lock file but not write it; " +
	"a lock shared by a group needs it group-writable (chmod g+w, and umask 002 for its users; docs/security.md)"

// dirCause is what taking a lock whose file this user may write, in a
// directory it may not, says after the sidecar it could not create: why
// (docs/security.md, "A lock shared by a group").
const dirCause = ", beside the lock: its directory must let this user create and remove files " +
	"(for a group: group-writable, setgid, not sticky; docs/security.md)"

func mkdir(t *testing.T, dir string) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// openDir is a directory in dir that anyone may write, for a lock file
// that only its owner may.
func openDir(t *testing.T, dir string) string {
	t.Helper()
	d := mkdir(t, filepath.Join(dir, "open"))
	if err := os.Chmod(d, 0o777); err != nil {
		t.Fatal(err)
	}
	return d
}

func writeFile(t *testing.T, path, data string, mode os.FileMode) string {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), mode); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestBadPathErrors shows every error line the command prints for a path
// it cannot lock, on both mechanisms, and checks that run and status agree
// on it: one line, the path once, the cause in plain words, never
// SQLite's; status names the same cause (as its error, or as the reason of
// the state it prints), in text and in --json, but where nobody holds the
// lock and only taking it is refused (an unwritable directory or lock
// file), where status says free or stale; nothing is created.
func TestBadPathErrors(t *testing.T) {
	shared := sharedBinary(t)
	for _, bp := range badPaths {
		for _, mech := range mechanisms {
			t.Run(bp.name+"/"+mech, func(t *testing.T) {
				if bp.asOther && os.Geteuid() != 0 {
					t.Skip("needs root to run proclock as another user")
				}
				dir := sharedDir(t)
				path := bp.make(t, dir)
				before := listDir(t, dir)
				as := func(args ...string) result {
					cmd := proclockCmd(args)
					if bp.asOther {
						cmd.Path, cmd.Args[0] = shared, shared
						cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
					}
					return runCmd(t, cmd)
				}
				run := as("run", "-n", "--mechanism", mech, path, "--", "true")
				t.Logf("run:    %s", strings.TrimSpace(run.stderr))
				if run.code != exitUsage || run.stdout != "" {
					t.Errorf("run: exit %d, stdout %q; want exit 2, nothing on stdout", run.code, run.stdout)
				}
				cause := checkErrorLine(t, "run", run.stderr, "proclock: acquire ", path)
				if !strings.Contains(cause, bp.cause) {
					t.Errorf("run says %q; want it to say %q", cause, bp.cause)
				}

				status := as("status", "--mechanism", mech, path)
				t.Logf("status: %s", strings.TrimSpace(status.stdout+status.stderr))
				if status.code != exitUsage && !bp.free {
					t.Errorf("status: exit %d; want 2", status.code)
				}
				if bp.free {
					if status.code != 0 || status.stderr != "" || strings.Count(status.stdout, path) != 1 || !strings.Contains(status.stdout, ": free") && !strings.Contains(status.stdout, ": stale") {
						t.Errorf("status: exit %d, %q, %q; want exit 0, free or stale, the path once", status.code, status.stdout, status.stderr)
					}
				} else if status.stderr != "" {
					if got := checkErrorLine(t, "status", status.stderr, "proclock: inspect ", path); got != cause {
						t.Errorf("status says %q, run %q: they disagree", got, cause)
					}
				} else if !strings.Contains(status.stdout, cause) || strings.Count(status.stdout, path) != 1 || strings.Contains(status.stdout, "sqlite3:") {
					t.Errorf("status printed %q; want the cause %q, the path once", status.stdout, cause)
				} else {
					js := as("status", "--json", "--mechanism", mech, path)
					var st struct{ State, Reason string }
					if err := json.Unmarshal([]byte(js.stdout), &st); err != nil || js.code != exitUsage {
						t.Fatalf("status --json: exit %d, %q, %v", js.code, js.stdout, err)
					}
					if !slices.Contains([]string{"inaccessible", "foreign"}, st.State) || st.Reason != cause {
						t.Errorf("status --json: state %q, reason %q; want inaccessible or foreign, reason %q", st.State, st.Reason, cause)
					}
				}
				if after := listDir(t, dir); !slices.Equal(after, before) {
					t.Errorf("the directory held %q, now %q", before, after)
				}
			})
		}
	}
}

// checkErrorLine checks that s is one line, prefix, the path once, then a
// cause in plain words, and returns the cause.
func checkErrorLine(t *testing.T, what, s, prefix, path string) string {
	t.Helper()
	oneLine(t, what, s)
	switch {
	case !strings.HasPrefix(s, prefix+path+": "):
		t.Errorf("%s: %q; want it to start %q", what, s, prefix+path+": ")
	case strings.Count(s, path) != 1:
		t.Errorf("%s: %q names the path %d times", what, s, strings.Count(s, path))
	case strings.Contains(s, "sqlite3:") || strings.Contains(s, "?mode="):
		t.Errorf("%s: %q shows SQLite's words", what, s)
	}
	cause := strings.TrimSpace(strings.TrimPrefix(s, prefix+path+": "))
	if cause == "" {
		t.Errorf("%s: %q gives no cause", what, s)
	}
	return cause
}

// listDir lists everything under dir.
func listDir(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil {
			names = append(names, p)
		}
		return nil
	})
	return names
}

// sharedDir is a new directory other users may enter.
func sharedDir(t *testing.T) string { return locktest.SharedDir(t) }

// sharedBinary is a copy of the proclock binary that another user may run.
func sharedBinary(t *testing.T) string { return locktest.SharedCopy(t, bin) }

// runCmd runs a prepared proclock command to the end.
func runCmd(t *testing.T, cmd *exec.Cmd) result {
	t.Helper()
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		if _, ok := err.(*exec.ExitError); !ok {
			t.Fatalf("proclock %q: %v", cmd.Args[1:], err)
		}
	}
	return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
}

// TestVerboseCause: with -v, a lock that cannot be taken gets a second
// line, the cause in full, in the system's own words (docs/command.md);
// the first line is the one without -v.
func TestVerboseCause(t *testing.T) {
	path := filepath.Join(t.TempDir(), "missing", "x.lock")
	for _, mech := range mechanisms {
		plain := runProclock(t, "run", "-n", "--mechanism", mech, path, "--", "true")
		verbose := runProclock(t, "run", "-nv", "--mechanism", mech, path, "--", "true")
		lines := strings.Split(strings.TrimSuffix(verbose.stderr, "\n"), "\n")
		if verbose.code != exitUsage || len(lines) != 2 || lines[0]+"\n" != plain.stderr {
			t.Errorf("%s: run -v: exit %d, %q; want exit 2, %q then the cause in full", mech, verbose.code, verbose.stderr, plain.stderr)
			continue
		}
		if !strings.HasPrefix(lines[1], "proclock: the cause in full: ") || !strings.Contains(lines[1], "no such file or directory") {
			t.Errorf("%s: run -v's second line %q; want the cause in full, in the system's words", mech, lines[1])
		}
	}
}

// TestReleaseErrorLine: a lock taken whose file cannot be removed on
// release (a dead holder's stamp, another user's, in a sticky directory
// such as /tmp) is let go all the same; run says so in one line, the path
// once, in plain words, and exits with COMMAND's status.
func TestReleaseErrorLine(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root to run proclock as another user")
	}
	shared := sharedBinary(t)
	dir := filepath.Join(sharedDir(t), "sticky")
	mkdir(t, dir)
	if err := os.Chmod(dir, 0o777|os.ModeSticky); err != nil {
		t.Fatal(err)
	}
	id, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatal(err)
	}
	id.PID, id.StartTime = locktest.DeadPID(t), 0
	stamp := lockrec.Record{Format: lockrec.Format, Identity: id, AcquiredAt: time.Now(), Nonce: "dead"}.Marshal()
	path := writeFile(t, filepath.Join(dir, "x.lock"), string(stamp), 0o666)
	if err := os.Chmod(path, 0o666); err != nil { // past the umask
		t.Fatal(err)
	}
	cmd := proclockCmd([]string{"run", "-n", "--mechanism", "file", path, "--", "true"})
	cmd.Path, cmd.Args[0] = shared, shared
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	res := runCmd(t, cmd)
	t.Logf("run: %s", strings.TrimSpace(res.stderr))
	if res.code != 0 {
		t.Errorf("run: exit %d; want COMMAND's 0", res.code)
	}
	if got := checkErrorLine(t, "run", res.stderr, "proclock: release ", path); got != "permission denied" {
		t.Errorf("run's release error says %q; want permission denied", got)
	}
}
