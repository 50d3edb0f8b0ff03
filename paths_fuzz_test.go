package proclock_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// FuzzAcquirePath: any path under a temporary directory, on either
// mechanism, natively. Nothing panics; an Acquire either holds the lock and
// its Release leaves nothing, or fails with a held error or a
// *proclock.Error of one line that names the path once and never shows
// SQLite's raw words; a failure creates nothing.
func FuzzAcquirePath(f *testing.F) {
	for _, seed := range []string{
		"x.lock", "dir/x.lock", "x.lock/", ".", "..", "a\x00b", "x.lock.holder", "%3f?#x", "é.lock",
		strings.Repeat("n", 255), strings.Repeat("n", 256), strings.Repeat("d/", 520) + "x",
		strings.Repeat(strings.Repeat("d", 200)+"/", 20) + "x",
	} {
		f.Add(seed, false, true)
		f.Add(seed, true, false)
	}
	ctx := context.Background()
	f.Fuzz(func(t *testing.T, rel string, file, makeParent bool) {
		root := t.TempDir()
		path := filepath.Join(root, rel)
		if !strings.HasPrefix(path, root+string(filepath.Separator)) || strings.HasSuffix(rel, "/") && path == root {
			return // outside the temporary directory: not ours to lock
		}
		if strings.HasSuffix(rel, "/") {
			path += "/"
		}
		if makeParent {
			os.MkdirAll(filepath.Dir(path), 0o755) // may fail (too long, a NUL): the Acquire says why
		}
		before := listTree(t, root)
		mech := proclock.MechanismSQLite
		if file {
			mech = proclock.MechanismFile
			locktest.SkipOnWine(t, locktest.WineBirthTime)
		}
		l, err := proclock.Acquire(ctx, nativePlatform(mech), path, proclock.Options{RemoveOnRelease: true})
		if err != nil {
			checkErrorLine(t, err, path)
			if after := listTree(t, root); strings.Join(after, "\n") != strings.Join(before, "\n") {
				t.Fatalf("a failed Acquire of %q left %q", path, after)
			}
			return
		}
		if err := l.Release(); err != nil {
			t.Fatalf("Release of %q: %v", path, err)
		}
		if after := listTree(t, root); len(after) != len(before) {
			t.Fatalf("Release of %q left %q", path, after)
		}
	})
}

// checkErrorLine fails t unless err is a held error or a *proclock.Error
// whose message is one line (but for the path's own newlines), names the
// path once, and does not show SQLite's raw words.
func checkErrorLine(t *testing.T, err error, path string) {
	t.Helper()
	if errors.Is(err, proclock.ErrHeld) {
		return
	}
	if _, ok := errors.AsType[*proclock.Error](err); !ok {
		t.Fatalf("Acquire of %q: %T %v; want a *proclock.Error", path, err, err)
	}
	msg := err.Error()
	switch {
	case strings.Count(msg, "\n") != strings.Count(path, "\n"):
		t.Fatalf("error of more than one line: %q", msg)
	case strings.Count(msg, path) != 1:
		t.Fatalf("error names the path %d times: %q", strings.Count(msg, path), msg)
	case strings.Contains(msg, "sqlite3:") || strings.Contains(msg, "?mode="):
		t.Fatalf("error shows SQLite's words: %q", msg)
	}
}

// listTree lists every name under root, for "nothing left behind".
func listTree(t *testing.T, root string) []string {
	t.Helper()
	var names []string
	filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			names = append(names, p[len(root):])
		}
		return nil
	})
	return names
}
