package lockfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/fserr"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
	"golang.org/x/sys/unix"
)

func TestFileIDPassesStatxThrough(t *testing.T) {
	fsys := lockfs.OS()
	dir := t.TempDir()
	var stx unix.Statx_t
	err := unix.Statx(unix.AT_FDCWD, dir, unix.AT_SYMLINK_NOFOLLOW, unix.STATX_INO|unix.STATX_BTIME, &stx)
	if err != nil {
		t.Skipf("no statx here (%v): nothing to compare with", err)
	}
	want := lockfs.FileID{Dev: unix.Mkdev(stx.Dev_major, stx.Dev_minor), Ino: stx.Ino}
	if stx.Mask&unix.STATX_BTIME != 0 {
		want.Birth, want.HasBirth = time.Unix(stx.Btime.Sec, int64(stx.Btime.Nsec)), true
	} else {
		t.Logf("the filesystem of %s records no birth time", dir)
	}

	if id := mustFileID(t, fsys, dir); !identical(id, want) {
		t.Errorf("FileID(%s) = %+v, statx says %+v", dir, id, want)
	}
	if id := mustFileIDOf(t, fsys, mustOpen(t, openRead(fsys), dir)); !identical(id, want) {
		t.Errorf("FileIDOf(Open(%s)) = %+v, statx says %+v", dir, id, want)
	}
}

// TestRangeWriteLockedWriteOnly: the kernel tells a write lock on a file
// through a descriptor opened only for writing, as the file mechanism
// opens the file it creates (fsx.CreateExcl), and through one opened
// only for reading.
func TestRangeWriteLockedWriteOnly(t *testing.T) {
	fsys := lockfs.OS()
	rl := fsys.(lockfs.RangeLocker)
	path := filepath.Join(t.TempDir(), "x")
	w, err := fsys.OpenFile(path, fsx.CreateExcl, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r, err := fsys.OpenNoFollow(path)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	for _, f := range []lockfs.File{w, r} {
		if locked, err := rl.RangeWriteLocked(f, 1<<30, 512); err != nil || locked {
			t.Errorf("before the lock: %v, %v; want unlocked", locked, err)
		}
	}
	holder, err := rl.OpenLockable(path)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	if got, err := rl.TryLockRange(holder, 1<<30, 512); err != nil || !got {
		t.Fatalf("TryLockRange: %v, %v", got, err)
	}
	for _, f := range []lockfs.File{w, r} {
		if locked, err := rl.RangeWriteLocked(f, 1<<30, 512); err != nil || !locked {
			t.Errorf("beside the lock: %v, %v; want locked", locked, err)
		}
	}
}

// RenameNoReplace moves a file to a free name, and fails with fs.ErrExist,
// changing nothing, when anything is at the new name (a symlink there,
// dangling, included).
func TestRenameNoReplace(t *testing.T) {
	fsys := lockfs.OS()
	rn, ok := fsys.(fsx.NoReplaceRenamer)
	if !ok {
		t.Fatal("OS has no RenameNoReplace on linux")
	}
	dir := t.TempDir()
	from, to, taken, link := filepath.Join(dir, "from"), filepath.Join(dir, "to"), filepath.Join(dir, "taken"), filepath.Join(dir, "link")
	writeFile(t, fsys, from, "record")
	writeFile(t, fsys, taken, "other")
	mustSymlink(t, fsys, "missing", link)
	for _, target := range []string{taken, link} {
		err := rn.RenameNoReplace(from, target)
		if errors.Is(err, fserr.ErrNoReplaceUnsupported) {
			t.Skipf("the temporary directory's filesystem has no RENAME_NOREPLACE: %v", err)
		}
		if !errors.Is(err, fs.ErrExist) {
			t.Errorf("RenameNoReplace onto %s = %v, want fs.ErrExist", filepath.Base(target), err)
		}
		if _, err := fsys.Lstat(from); err != nil {
			t.Errorf("the failed rename moved the file: %v", err)
		}
	}
	if err := rn.RenameNoReplace(from, to); err != nil {
		t.Fatal(err)
	}
	if got, err := os.ReadFile(to); err != nil || string(got) != "record" {
		t.Errorf("renamed file reads %q, %v", got, err)
	}
	if _, err := fsys.Lstat(from); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("the old name after the rename: %v, want gone", err)
	}
	if got, err := os.ReadFile(taken); err != nil || string(got) != "other" {
		t.Errorf("the taken name reads %q, %v after the refused renames", got, err)
	}
}
