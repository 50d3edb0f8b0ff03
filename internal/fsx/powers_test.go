package fsx_test

import (
	"runtime"
	"testing"

	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// TestOSPowers: lockfs.OS has the powers this package declares where its
// doc says it does. lockfs cannot name these interfaces, so a method whose
// signature drifted from one would turn the power off without a compile
// error; this is where it fails instead.
func TestOSPowers(t *testing.T) {
	unix := runtime.GOOS != "windows" && runtime.GOOS != "wasip1" && runtime.GOOS != "js"
	linux := runtime.GOOS == "linux"
	osFS := lockfs.OS()
	for _, tt := range []struct {
		power string
		has   bool
		want  bool
	}{
		{"PathLimits", is[fsx.PathLimits](osFS), true},
		{"InUse", is[interface{ InUse(error) bool }](osFS), true},
		{"DirOpener", is[fsx.DirOpener](osFS), unix},
		{"LookOpener", is[fsx.LookOpener](osFS), unix},
		{"Flocker", is[fsx.Flocker](osFS), linux},
		{"NoReplaceRenamer", is[fsx.NoReplaceRenamer](osFS), linux},
	} {
		if tt.has != tt.want {
			t.Errorf("lockfs.OS() has %s: %v, want %v on %s", tt.power, tt.has, tt.want, runtime.GOOS)
		}
	}
}

func is[P any](fsys lockfs.FS) bool {
	_, ok := fsys.(P)
	return ok
}
