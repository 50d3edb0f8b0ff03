package lockfs_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
)

// DirID: every name of one directory, through symlinks or not, has one
// identity; another directory has another; a file or a missing directory
// is a *fs.PathError. On the real FS and on the fake.
func TestDirID(t *testing.T) {
	// stager is how each world makes directories, symlinks and files.
	type stager interface {
		Mkdir(name string, perm fs.FileMode) error
		Symlink(oldname, newname string) error
		WriteFile(name string, data []byte, perm fs.FileMode) error
	}
	w := fake.New()
	for _, tc := range []struct {
		name  string
		fsys  lockfs.FS
		stage stager
		root  string
	}{
		{"os", lockfs.OS(), osStager{}, t.TempDir()},
		{"fake", w.FS(), w, "/tmp"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fsys, root := tc.fsys, tc.root
			a, b := filepath.Join(root, "a"), filepath.Join(root, "b")
			for _, d := range []string{a, b} {
				if err := tc.stage.Mkdir(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			names := []string{a + "/", filepath.Join(a, "..", "a")}
			if tc.name == "fake" || symlinksWork(t, fsys, root) {
				link := filepath.Join(root, "link-to-a")
				if err := tc.stage.Symlink(a, link); err != nil {
					t.Fatal(err)
				}
				names = append(names, link)
			}
			file := filepath.Join(root, "file")
			if err := tc.stage.WriteFile(file, nil, 0o644); err != nil {
				t.Fatal(err)
			}
			idA := mustDirID(t, fsys, a)
			for _, other := range names {
				if id := mustDirID(t, fsys, other); id.Dev != idA.Dev || id.Ino != idA.Ino {
					t.Errorf("DirID(%s) = %+v; want DirID(%s) = %+v", other, id, a, idA)
				}
			}
			if id := mustDirID(t, fsys, b); id.Dev == idA.Dev && id.Ino == idA.Ino {
				t.Errorf("two directories share an identity: %+v", id)
			}
			for _, bad := range []struct {
				path string
				want error
			}{
				{file, nil},
				{filepath.Join(root, "missing"), fs.ErrNotExist},
				{"", fs.ErrInvalid},
			} {
				_, err := fsys.DirID(bad.path)
				var pe *fs.PathError
				if !errors.As(err, &pe) || (bad.want != nil && !errors.Is(err, bad.want)) {
					t.Errorf("DirID(%q) = %v; want a *fs.PathError matching %v", bad.path, err, bad.want)
				}
			}
		})
	}
}

func mustDirID(t *testing.T, fsys lockfs.FS, dir string) lockfs.FileID {
	t.Helper()
	id, err := fsys.DirID(dir)
	if err != nil {
		t.Fatalf("DirID(%s): %v", dir, err)
	}
	return id
}

// osStager stages the real filesystem.
type osStager struct{}

func (osStager) Mkdir(name string, perm fs.FileMode) error { return os.Mkdir(name, perm) }
func (osStager) Symlink(oldname, newname string) error     { return os.Symlink(oldname, newname) }
func (osStager) WriteFile(name string, data []byte, perm fs.FileMode) error {
	return os.WriteFile(name, data, perm)
}
