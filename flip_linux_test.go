package proclock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/proclock/proclock"
)

// flipTold bounds the wait for a flipped symlink's loss: well under the
// watch's backstop (10 s, platform/watch_linux.go), which told it before
// the symlinks of the path were watched.
const flipTold = 5 * time.Second

// TestLostSymlinkFlipped: a lock taken through a symlinked directory
// (current -> v1) is lost once the symlink is flipped to another
// directory (v2): its path then names another file, which a second
// holder may take at once. The loss is told by the watch of the symlink's
// directory, whenever Lost was first asked; Release removes the first
// holder's own files in v1 and leaves v2's lock alone (docs/protocol.md,
// "Release acts on what it locked").
func TestLostSymlinkFlipped(t *testing.T) {
	for mech, p := range nativeMechs() {
		for _, askAfter := range []bool{false, true} {
			name := mech + "/asked-before"
			if askAfter {
				name = mech + "/asked-after"
			}
			t.Run(name, func(t *testing.T) {
				top := t.TempDir()
				v1, v2, current := filepath.Join(top, "v1"), filepath.Join(top, "v2"), filepath.Join(top, "current")
				mustDo(t, os.Mkdir(v1, 0o755))
				mustDo(t, os.Mkdir(v2, 0o755))
				mustDo(t, os.Symlink("v1", current))
				path := filepath.Join(current, "app.lock")
				first, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
				mustDo(t, err)
				if !askAfter {
					if err := first.Err(); err != nil {
						t.Fatalf("Err before the flip = %v", err)
					}
				}
				// ln -sfn v2 current: a new symlink renamed over the old.
				mustDo(t, os.Symlink("v2", current+".new"))
				mustDo(t, os.Rename(current+".new", current))
				select {
				case <-first.Lost():
				case <-time.After(flipTold):
					t.Fatalf("the flip not told within %v; Err = %v", flipTold, first.Err())
				}
				if err := first.Err(); !errors.Is(err, proclock.ErrRemoved) {
					t.Errorf("Err after the flip = %v; want ErrRemoved (nothing at current/app.lock)", err)
				}
				second, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
				mustDo(t, err)
				mustDo(t, first.Release())
				if err := second.Err(); err != nil {
					t.Errorf("the second holder's lock after the first's Release: Err = %v", err)
				}
				for _, n := range []string{"app.lock.holder", "app.lock"} {
					_, err := os.Lstat(filepath.Join(v1, n))
					if (n == "app.lock.holder" || mech == "file") && !errors.Is(err, os.ErrNotExist) {
						t.Errorf("v1/%s after the first holder's Release: %v", n, err)
					}
				}
				if _, err := os.Lstat(filepath.Join(v2, "app.lock")); err != nil {
					t.Errorf("the second holder's file: %v", err)
				}
				if mech == "sqlite" {
					if _, err := os.Lstat(filepath.Join(v2, "app.lock.holder")); err != nil {
						t.Errorf("the second holder's mark: %v", err)
					}
				}
				mustDo(t, second.Release())
			})
		}
	}
}
