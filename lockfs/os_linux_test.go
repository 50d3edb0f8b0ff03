package lockfs_test

import (
	"testing"
	"time"

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
