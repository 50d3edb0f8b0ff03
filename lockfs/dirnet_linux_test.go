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

// DirNetworkFS tells what DirID and NetworkFS tell of a directory, on
// every local filesystem the test can reach, each looked at twice; a file or nothing at the path fails as
// DirID does.
func TestDirNetworkFSAgreesWithDirIDAndNetworkFS(t *testing.T) {
	fsys := lockfs.OS()
	dn, ok := fsys.(fsx.DirNetworkFS)
	if !ok {
		t.Fatal("the OS's FS has no DirNetworkFS on linux")
	}
	dirs := []string{t.TempDir()}
	if info, err := os.Stat("/dev/shm"); err == nil && info.IsDir() {
		dirs = append(dirs, "/dev/shm") // tmpfs, another mount
	} else {
		t.Log("no /dev/shm here: one mount checked")
	}
	for _, dir := range dirs {
		wantID, err := fsys.DirID(dir)
		if err != nil {
			t.Fatal(err)
		}
		wantKind, err := fsys.(lockfs.NetworkFS).NetworkFS(dir)
		if err != nil {
			t.Fatal(err)
		}
		for round := range 2 {
			id, kind, err := dn.DirNetworkFS(dir)
			if err != nil || id.Dev != wantID.Dev || id.Ino != wantID.Ino || kind != wantKind {
				t.Fatalf("round %d: DirNetworkFS(%s) = %+v, %q, %v; want %+v, %q (DirID, NetworkFS)", round, dir, id, kind, err, wantID, wantKind)
			}
		}
	}
	file := filepath.Join(dirs[0], "file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, _, err := dn.DirNetworkFS(file); !errors.Is(err, syscall.ENOTDIR) {
		t.Errorf("DirNetworkFS of a file: %v; want ENOTDIR", err)
	}
	if _, _, err := dn.DirNetworkFS(filepath.Join(dirs[0], "none")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("DirNetworkFS of nothing: %v; want fs.ErrNotExist", err)
	}
}
