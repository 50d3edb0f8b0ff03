package fake_test

import (
	"errors"
	"io/fs"
	"runtime"
	"testing"

	"github.com/proclock/proclock/fake"
)

// TestNamesSeparatedAsThisOS: the fake FS reads a name as path/filepath
// does on the OS it is built for. On windows a volume name is dropped and
// a backslash separates elements, so a lock path written as Windows writes
// it (C:\dir\app.lock) names the file its slashed form names; elsewhere a
// backslash is a character of a name, as it is to the kernel.
func TestNamesSeparatedAsThisOS(t *testing.T) {
	w := fake.New()
	if err := w.Mkdir("/dir", 0o755); err != nil {
		t.Fatal(err)
	}
	if err := w.WriteFile(`/dir\app.lock`, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, slashed := w.ReadFile("/dir/app.lock")
	_, volume := w.ReadFile(`C:\dir\app.lock`)
	if runtime.GOOS == "windows" {
		if slashed != nil || volume != nil {
			t.Errorf(`dir\app.lock written; reading /dir/app.lock: %v, C:\dir\app.lock: %v; want both read`, slashed, volume)
		}
		return
	}
	if !errors.Is(slashed, fs.ErrNotExist) {
		t.Errorf(`dir\app.lock written; reading /dir/app.lock: %v, want it missing (a backslash is part of the name)`, slashed)
	}
	if b, err := w.ReadFile(`/dir\app.lock`); err != nil || string(b) != "x" {
		t.Errorf(`reading /dir\app.lock back: %q, %v`, b, err)
	}
}
