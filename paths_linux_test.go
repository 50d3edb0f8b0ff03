package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// Any path the OS accepts works or fails with ErrPathTooLong, creating
// nothing; nothing panics (issue 10, item 1; docs/protocol.md, "Names").

// pathCase is a lock path of a given total length or base-name length.
type pathCase struct {
	name       string
	length     int // of the whole path, as given (relative when short)
	baseLength int // of its base name, when length is 0
	// deep: a relative path of a base name of 200 bytes, in a working
	// directory whose own path is longer than PATH_MAX.
	deep bool
}

var pathCases = []pathCase{
	{name: "path 1", length: 1},
	{name: "path 200", length: 200},
	{name: "path 1016", length: 1016},
	{name: "path 1024", length: 1024},
	{name: "path 1025", length: 1025},
	{name: "path 2000", length: 2000},
	{name: "path PATH_MAX-1", length: -1},
	{name: "name 200", baseLength: 200},
	{name: "name 217", baseLength: 217},
	{name: "name 218", baseLength: 218},
	{name: "name 248", baseLength: 248},
	{name: "name 255", baseLength: 255},
	{name: "relative, working directory past PATH_MAX", deep: true},
}

// pathMax is the longest path this system takes (PATH_MAX-1).
func pathMax(t *testing.T) int {
	pm, _ := lockfs.OS().(fsx.PathLimits).PathLimits()
	if pm == 0 {
		t.Skip("this system has no fixed PATH_MAX")
	}
	return pm
}

// makeLockPath makes the directories of c's path under root and returns
// the path: relative to root (the working directory) when it fits, else
// absolute, directories of up to 200 bytes, then the base name.
func makeLockPath(t *testing.T, root string, c pathCase) string {
	t.Helper()
	if c.deep {
		enterDeep(t, root)
		return strings.Repeat("n", 200)
	}
	if c.length == 0 {
		return filepath.Join(root, strings.Repeat("n", c.baseLength))
	}
	length := c.length
	if length < 0 {
		length = pathMax(t)
	}
	if length <= 200 {
		return strings.Repeat("n", length) // relative, in root
	}
	dir := root
	for length-len(dir)-1 > 210 {
		n := min(200, length-len(dir)-1-11)
		dir = filepath.Join(dir, strings.Repeat("d", n))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, strings.Repeat("n", length-len(dir)-1))
	if len(path) != length {
		t.Fatalf("made a path of %d bytes; want %d", len(path), length)
	}
	return path
}

// enterDeep makes directories of 200 bytes, one in the other, in root
// (the working directory), and moves into each, until the working
// directory's path is longer than PATH_MAX: no path of it can be opened,
// only paths relative to it.
func enterDeep(t *testing.T, root string) {
	t.Helper()
	d := strings.Repeat("d", 200)
	for n := len(root); n <= pathMax(t); n += 1 + len(d) {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Chdir(d); err != nil {
			t.Fatal(err)
		}
	}
}

// wantTooLong says whether proclock refuses a path of this length: less
// than 64 bytes to spare under PATH_MAX (docs/protocol.md, "Names").
func wantTooLong(t *testing.T, path string) bool {
	return len(path)+64 > pathMax(t)
}

func TestPathLengths(t *testing.T) {
	exe := secExe(t)
	ctx := context.Background()
	for _, mech := range mechanisms {
		for _, c := range pathCases {
			t.Run(fmt.Sprintf("%s/%s", mech, c.name), func(t *testing.T) {
				root := secSharedDir(t)
				t.Chdir(root)
				path := makeLockPath(t, root, c)
				here := root // where to look for what was left
				if c.deep {
					here = "." // its path is too long to walk
				}
				p := nativePlatform(mech)
				l, err := proclock.Acquire(ctx, p, path, proclock.Options{RemoveOnRelease: true})
				if wantTooLong(t, path) {
					if !errors.Is(err, proclock.ErrPathTooLong) || !errors.Is(err, lockfs.ErrNameTooLong) {
						t.Fatalf("Acquire of a %d-byte path: %v; want ErrPathTooLong", len(path), err)
					}
					if _, ok := errors.AsType[*proclock.Error](err); !ok || strings.Count(err.Error(), path) != 1 || !strings.Contains(err.Error(), "name too long") {
						t.Errorf("error %q: want a *proclock.Error naming the path once, saying name too long", err)
					}
					if left := listTree(t, root); len(left) != 0 {
						t.Errorf("a refused Acquire left %q", left)
					}
					if _, err := proclock.Inspect(ctx, p, path); !errors.Is(err, proclock.ErrPathTooLong) {
						t.Errorf("Inspect of a %d-byte path: %v; want ErrPathTooLong", len(path), err)
					}
					return
				}
				if err != nil {
					t.Fatalf("Acquire of a %d-byte path (base %d bytes): %v", len(path), len(filepath.Base(path)), err)
				}
				r := secTryAs(t, exe, nil, mech, absIn(root, path))
				if r.Acquired || !r.Held || r.HolderPID != os.Getpid() {
					t.Errorf("another process while we hold it: %+v; want held by pid %d", r, os.Getpid())
				}
				if err := l.Release(); err != nil {
					t.Fatal(err)
				}
				if left := listTree(t, here); len(left) != 0 {
					t.Errorf("Release left %q", left)
				}
				r = secTryAs(t, exe, nil, mech, absIn(root, path))
				if !r.Acquired {
					t.Errorf("another process once released: %+v; want it taken", r)
				}
			})
		}
	}
}

// absIn is path made absolute in root, for a helper whose working
// directory is another; a path relative to a working directory past
// PATH_MAX stays relative: the helper runs there too.
func absIn(root, path string) string {
	if filepath.IsAbs(path) {
		return path
	}
	if wd, err := os.Getwd(); err != nil || wd != root {
		return path
	}
	return filepath.Join(root, path)
}
