package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/proclock/proclock/internal/locktest"
)

// TestRunPathLengths: lock paths of every length the system takes, and
// names up to NAME_MAX, through the command on both mechanisms: each is
// locked, keeps a second run out (exit 1, naming the holder), and leaves
// nothing behind with --remove; or, with less than 64 bytes to spare under
// PATH_MAX, is refused (exit 2, "name too long") creating nothing
// (docs/protocol.md, "Names").
func TestRunPathLengths(t *testing.T) {
	const pathMax = 4095 // linux's PATH_MAX, less its NUL
	for _, mech := range mechanisms {
		for _, c := range []struct {
			name         string
			length, base int
		}{
			{"path 1", 1, 0}, {"path 200", 200, 0}, {"path 1016", 1016, 0}, {"path 1024", 1024, 0},
			{"path 1025", 1025, 0}, {"path 2000", 2000, 0}, {"path PATH_MAX-1", pathMax, 0},
			{"name 200", 0, 200}, {"name 217", 0, 217}, {"name 218", 0, 218}, {"name 248", 0, 248}, {"name 255", 0, 255},
			{"relative, working directory past PATH_MAX", -1, 0},
		} {
			t.Run(mech+"/"+c.name, func(t *testing.T) {
				root := t.TempDir()
				t.Chdir(root) // proclock runs here too: the short paths are relative
				path := lengthPath(t, root, c.length, c.base)
				here := root // where to look for what was left
				if c.length < 0 {
					here = "." // its path is too long to walk
				}
				before := listDir(t, here)
				if len(path)+64 > pathMax {
					res := runProclock(t, "run", "-n", "--mechanism", mech, path, "--", "true")
					if res.code != exitUsage || !strings.Contains(res.stderr, "name too long") || strings.Count(res.stderr, path) != 1 {
						t.Errorf("run on a %d-byte path: exit %d, %q; want exit 2, name too long, the path once", len(path), res.code, res.stderr)
					}
					if after := listDir(t, here); !slices.Equal(after, before) {
						t.Errorf("a refused run created %q", after[len(before):])
					}
					return
				}
				holder := holdLock(t, "run", "--mechanism", mech, "--remove", path)
				pid := "pid " + strconv.Itoa(holder.cmd.Process.Pid) + " "
				if res := runProclock(t, "run", "-n", "--mechanism", mech, path, "--", "true"); res.code != exitHeld || !strings.Contains(res.stderr, pid) {
					t.Errorf("second run while held: exit %d, %q; want exit 1 naming %s", res.code, res.stderr, pid)
				}
				holder.release()
				if after := listDir(t, here); !slices.Equal(after, before) {
					t.Errorf("run --remove left %q", after)
				}
				if res := runProclock(t, "run", "-n", "--mechanism", mech, "--remove", path, "--", "true"); res.code != 0 {
					t.Errorf("run once released: exit %d, %q", res.code, res.stderr)
				}
			})
		}
	}
}

// lengthPath makes the directories of a lock path of length bytes (relative
// to root when short), or of a base name of base bytes in root; for length
// -1, a base name of 200 bytes relative to a working directory made in
// root whose own path is longer than PATH_MAX.
func lengthPath(t *testing.T, root string, length, base int) string {
	t.Helper()
	if length < 0 {
		d := strings.Repeat("d", 200)
		for n := len(root); n <= 4096; n += 1 + len(d) {
			mkdir(t, d)
			if err := os.Chdir(d); err != nil {
				t.Fatal(err)
			}
		}
		return strings.Repeat("n", 200)
	}
	if base > 0 {
		return filepath.Join(root, strings.Repeat("n", base))
	}
	if length <= 200 {
		return strings.Repeat("n", length)
	}
	dir := root
	for length-len(dir)-1 > 210 {
		dir = filepath.Join(dir, strings.Repeat("d", min(200, length-len(dir)-12)))
	}
	mkdir(t, dir)
	return filepath.Join(dir, strings.Repeat("n", length-len(dir)-1))
}

// TestRunAndFlock: `flock FILE` and `proclock run FILE` keep each other
// out, both ways, on the sqlite mechanism (docs/design.md, "flock(1)").
func TestRunAndFlock(t *testing.T) {
	flock, err := exec.LookPath("flock")
	if err != nil {
		t.Skip("flock(1) is not installed (util-linux)")
	}
	path := filepath.Join(t.TempDir(), "x.lock")

	f := locktest.Start(t, exec.Command(flock, "-n", path, "sh", "-c", "echo locked; exec cat"))
	if line, _ := f.Line(); line != "locked" {
		t.Fatalf("flock(1) said %q", line)
	}
	res := runProclock(t, "run", "-n", "--mechanism", "sqlite", path, "--", "true")
	if res.code != exitHeld || !strings.Contains(res.stderr, "a flock(2) lock") {
		t.Errorf("run while flock(1) holds: exit %d, %q; want exit 1, held by a flock(2) lock", res.code, res.stderr)
	}
	st := runProclock(t, "status", "--mechanism", "sqlite", path)
	if st.code != exitHeld || !strings.Contains(st.stdout, "a flock(2) lock") {
		t.Errorf("status while flock(1) holds: exit %d, %q; want held by a flock(2) lock", st.code, st.stdout)
	}
	f.End()

	holder := holdLock(t, "run", "--mechanism", "sqlite", path)
	err = exec.Command(flock, "-n", path, "true").Run()
	if ee, ok := err.(*exec.ExitError); !ok || ee.ExitCode() != 1 {
		t.Errorf("flock -n while proclock holds: %v; want exit 1", err)
	}
	holder.release()
	if err := exec.Command(flock, "-n", path, "true").Run(); err != nil {
		t.Errorf("flock -n once proclock let go: %v", err)
	}
}
