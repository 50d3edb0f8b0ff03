package wake_test

import (
	"runtime"
	"testing"

	"github.com/proclock/proclock/internal/wake"
	"github.com/proclock/proclock/platform"
)

// TestNativePowers: the native Waker has the powers this package declares
// where platform's doc says it does (linux). platform cannot name these
// interfaces, so a method whose signature drifted from one would turn the
// power off without a compile error; this is where it fails instead.
func TestNativePowers(t *testing.T) {
	w := platform.Native().Wake
	linux := runtime.GOOS == "linux"
	if _, ok := w.(wake.Watcher); ok != linux {
		t.Errorf("the native Waker is a Watcher: %v, want %v on %s", ok, linux, runtime.GOOS)
	}
	if _, ok := w.(wake.ChangeWatcher); ok != linux {
		t.Errorf("the native Waker is a ChangeWatcher: %v, want %v on %s", ok, linux, runtime.GOOS)
	}
}
