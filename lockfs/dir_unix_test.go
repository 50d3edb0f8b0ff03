//go:build unix

package lockfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// withoutDirs is an FS with none of the optional powers: KeepDir reaches
// the directory by its path.
type withoutDirs struct{ lockfs.FS }

// TestKeepDirAfterFlip: a directory kept through a symlink that is then
// flipped to another directory still reaches the files of the first: the
// OS's Dir identifies and removes them there, and leaves the second's
// alone; a Dir reached by its path fails with ErrDirMoved instead, and
// touches nothing.
func TestKeepDirAfterFlip(t *testing.T) {
	for _, tc := range []struct {
		name string
		fsys lockfs.FS
	}{{"os", lockfs.OS()}, {"by path", withoutDirs{lockfs.OS()}}} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			for _, d := range []string{"v1", "v2"} {
				if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(base, d, "x"), []byte(d), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			current := filepath.Join(base, "current")
			if err := os.Symlink("v1", current); err != nil {
				t.Fatal(err)
			}
			d, err := fsx.KeepDir(tc.fsys, current)
			if err != nil {
				t.Fatal(err)
			}
			defer d.Close()
			want, err := lockfs.OS().FileID(filepath.Join(base, "v1", "x"))
			if err != nil {
				t.Fatal(err)
			}
			if id, err := d.FileID("x"); err != nil || !id.Same(want) || id.Links != 1 {
				t.Fatalf("FileID before the flip: %+v, %v; want v1/x's, %+v, 1 link", id, err, want)
			}
			if err := os.Remove(current); err != nil {
				t.Fatal(err)
			}
			if err := os.Symlink("v2", current); err != nil {
				t.Fatal(err)
			}
			id, ierr := d.FileID("x")
			rerr := d.Remove("x")
			_, v1 := os.Lstat(filepath.Join(base, "v1", "x"))
			_, v2 := os.Lstat(filepath.Join(base, "v2", "x"))
			if v2 != nil {
				t.Errorf("v2/x, which the path names now: %v; want it kept", v2)
			}
			if tc.name == "os" {
				if ierr != nil || !id.Same(want) || rerr != nil || !errors.Is(v1, fs.ErrNotExist) {
					t.Errorf("after the flip: FileID %+v, %v; Remove %v; v1/x %v; want v1/x's identity, then v1/x removed", id, ierr, rerr, v1)
				}
				return
			}
			if !errors.Is(ierr, fsx.ErrDirMoved) || !errors.Is(rerr, fsx.ErrDirMoved) || v1 != nil {
				t.Errorf("after the flip: FileID %v, Remove %v, v1/x %v; want ErrDirMoved, both files kept", ierr, rerr, v1)
			}
		})
	}
}

// TestDirRemoveMissing: Remove of a name that is not there fails with
// fs.ErrNotExist, naming the path; a closed Dir fails.
func TestDirRemoveMissing(t *testing.T) {
	dir := t.TempDir()
	d, err := fsx.KeepDir(lockfs.OS(), dir)
	if err != nil {
		t.Fatal(err)
	}
	err = d.Remove("none")
	if pe, ok := errors.AsType[*fs.PathError](err); !errors.Is(err, fs.ErrNotExist) || !ok || pe.Path != filepath.Join(dir, "none") {
		t.Errorf("Remove of a missing name: %v; want fs.ErrNotExist naming it", err)
	}
	d.Close()
	if _, err := d.FileID("none"); err == nil {
		t.Error("FileID on a closed Dir: no error")
	}
}

// TestExhausted: EMFILE and ENFILE, wrapped, are running out of
// descriptors; ENOENT is not.
func TestExhausted(t *testing.T) {
	wrap := func(e error) error { return &fs.PathError{Op: "open", Path: "x", Err: e} }
	for _, tc := range []struct {
		err  error
		want bool
	}{{wrap(syscall.EMFILE), true}, {wrap(syscall.ENFILE), true}, {wrap(syscall.ENOENT), false}, {nil, false}} {
		if got := fsx.Exhausted(tc.err); got != tc.want {
			t.Errorf("Exhausted(%v) = %v; want %v", tc.err, got, tc.want)
		}
	}
}

// TestKeepDirShared: directories kept at once share one descriptor while
// the path names the same directory (many locks of one directory keep one
// descriptor, not one each), which stays open until the last keeping
// closes; once the path names another directory, a new keeping gets its
// own descriptor, which reaches the new directory while the older
// keepings still reach theirs.
func TestKeepDirShared(t *testing.T) {
	if _, err := os.ReadDir("/proc/self/fd"); err != nil {
		t.Skip("needs /proc/self/fd to count descriptors")
	}
	fsys := lockfs.OS()
	base := t.TempDir()
	dir := filepath.Join(base, "d")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("first"), 0o644); err != nil {
		t.Fatal(err)
	}
	fds := func() int {
		entries, err := os.ReadDir("/proc/self/fd")
		if err != nil {
			t.Fatal(err)
		}
		return len(entries)
	}
	before := fds()
	var kept []fsx.Dir
	for range 10 {
		d, err := fsx.KeepDir(fsys, dir)
		if err != nil {
			t.Fatal(err)
		}
		kept = append(kept, d)
	}
	if got := fds() - before; got != 1 {
		t.Errorf("10 keepings of one directory hold %d descriptors, want 1", got)
	}
	firstID, err := kept[0].FileID("x")
	if err != nil {
		t.Fatal(err)
	}
	// The path now names another directory.
	if err := os.Rename(dir, filepath.Join(base, "old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "x"), []byte("second"), 0o644); err != nil {
		t.Fatal(err)
	}
	fresh, err := fsx.KeepDir(fsys, dir)
	if err != nil {
		t.Fatal(err)
	}
	if got := fds() - before; got != 2 {
		t.Errorf("a keeping of the new directory beside the old one's: %d descriptors, want 2", got)
	}
	freshID, err := fresh.FileID("x")
	if err != nil {
		t.Fatal(err)
	}
	if oldID, err := kept[9].FileID("x"); err != nil || !oldID.Same(firstID) || oldID.Same(freshID) {
		t.Errorf("an old keeping reaches %+v, %v; want the first directory's x %+v, not the new one's %+v", oldID, err, firstID, freshID)
	}
	for i, d := range kept {
		if err := d.Close(); err != nil {
			t.Fatal(err)
		}
		if i < len(kept)-1 {
			if _, err := d.FileID("x"); !errors.Is(err, fs.ErrClosed) {
				t.Errorf("a closed keeping: %v, want fs.ErrClosed", err)
			}
			if _, err := kept[len(kept)-1].FileID("x"); err != nil {
				t.Errorf("a keeping after another's Close: %v", err)
			}
		}
	}
	if got := fds() - before; got != 1 {
		t.Errorf("after the old keepings closed: %d descriptors, want 1 (the new directory's)", got)
	}
	fresh.Close()
	if got := fds() - before; got != 0 {
		t.Errorf("after every keeping closed: %d descriptors left open", got)
	}
}
