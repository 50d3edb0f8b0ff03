package fake

import (
	"path"
	"path/filepath"
	"testing"
)

// TestCleanFastPath: clean's shortcut for a name already clean gives
// what path.Clean gives, and takes no name that path.Clean would change.
func TestCleanFastPath(t *testing.T) {
	slow := func(name string) string {
		name = name[len(filepath.VolumeName(name)):]
		return path.Clean("/" + filepath.ToSlash(name))
	}
	for _, name := range []string{
		"/", "", ".", "..", "/tmp", "/tmp/", "//tmp", "/tmp//x", "/tmp/./x", "/tmp/../x",
		"/tmp/x/.", "/tmp/x/..", "tmp/x", "/tmp/x.lock", "/tmp/.x", "/tmp/..x", "/tmp/x..",
		"/tmp/x.lock.stale-100-abc", `/tmp\x`, `\tmp\x`, `C:\tmp\x`, "C:/tmp/x", "/a/b/c/d",
		"//server/share/x", "/.", "/..", "/...", "/a/...",
	} {
		if got, want := clean(name), slow(name); got != want {
			t.Errorf("clean(%q) = %q; path.Clean gives %q", name, got, want)
		}
		if isClean(name) && slow(name) != name {
			t.Errorf("isClean(%q), but path.Clean makes it %q", name, slow(name))
		}
	}
}
