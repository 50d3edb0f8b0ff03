package locktest

import (
	"io"
	"os"
	"path/filepath"
	"testing"
)

// SharedDir is a new directory that other users may enter and read, owned
// by this process's user; the test's temporary parent is opened up too
// (it is created 0700).
func SharedDir(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	for _, d := range []string{filepath.Dir(dir), dir} {
		if err := os.Chmod(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// SharedCopy copies the program at src into a SharedDir, mode 0755, so
// that another user may run it (the go tool's build directories are
// private to their user), and returns the copy's path.
func SharedCopy(t testing.TB, src string) string {
	t.Helper()
	path := filepath.Join(SharedDir(t), filepath.Base(src))
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}
