package platform

import (
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestLinksTo: the symlinks on the way to a directory are found as the
// kernel resolves them: relative and absolute targets, a link through a
// link, and ".." taken from the directory reached.
func TestLinksTo(t *testing.T) {
	top, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"v1/sub", "v2", "other"} {
		if err := os.MkdirAll(filepath.Join(top, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"current":   "v1",                            // relative
		"abs":       filepath.Join(top, "v1", "sub"), // absolute
		"chain":     "current",                       // a link to a link
		"other/up":  "../v1/sub",                     // ".." from other
		"v1/sub/up": "..",                            // back to v1
	}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(top, name)); err != nil {
			t.Fatal(err)
		}
	}
	for _, c := range []struct {
		dir  string
		want []link
	}{
		{"v1/sub", nil},
		{"current", []link{{top, "current"}}},
		{"current/sub", []link{{top, "current"}}},
		{"abs", []link{{top, "abs"}}},
		{"chain/sub", []link{{top, "chain"}, {top, "current"}}},
		{"other/up", []link{{filepath.Join(top, "other"), "up"}}},
		{"current/sub/up/sub", []link{{top, "current"}, {filepath.Join(top, "v1", "sub"), "up"}}},
		{"missing/x", nil},
	} {
		got := linksTo(filepath.Join(top, c.dir))
		if !slices.Equal(got, c.want) {
			t.Errorf("linksTo(%s) = %v; want %v", c.dir, got, c.want)
		}
	}
}

// TestLinksToLoop: a symlink loop ends after maxLinks links.
func TestLinksToLoop(t *testing.T) {
	top := t.TempDir()
	if err := os.Symlink("loop", filepath.Join(top, "loop")); err != nil {
		t.Fatal(err)
	}
	if got := linksTo(filepath.Join(top, "loop")); len(got) != maxLinks {
		t.Errorf("linksTo of a loop: %d links; want %d", len(got), maxLinks)
	}
}
