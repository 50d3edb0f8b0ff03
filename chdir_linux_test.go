package proclock_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// chdirHolder takes the lock app.lock by a relative path in the directory
// args[1], with the mechanism args[0], then changes its working directory
// to args[2] (a daemon's chdir("/")), and prints "HELD" and what Err says
// then (the watch's first look, after the chdir). It releases once its
// stdin closes, and prints "RELEASED" with Release's error.
var chdirHolder = locktest.NewRole("chdir-holder", func(args []string) int {
	p := nativeMechs()[args[0]]
	if err := os.Chdir(args[1]); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	l, err := proclock.Acquire(context.Background(), p, "app.lock", proclock.Options{})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	if err := os.Chdir(args[2]); err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	fmt.Println("HELD", l.Err())
	var b [1]byte
	os.Stdin.Read(b[:])
	fmt.Println("RELEASED", l.Release())
	return 0
})

// TestLockAfterChdir: a lock taken by a relative path, in a process that
// then changes its working directory (where another lock of the same
// name may be held), is judged by the file it locked: not lost, and its
// Release removes its own mark (or stamped file), never touching the
// other lock (docs/protocol.md, "Release acts on what it locked").
func TestLockAfterChdir(t *testing.T) {
	for _, mech := range []string{"sqlite", "file"} {
		for _, other := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/other=%v", mech, other), func(t *testing.T) {
				a, b := t.TempDir(), t.TempDir()
				if other {
					ol, err := proclock.Acquire(context.Background(), nativeMechs()[mech], filepath.Join(b, "app.lock"), proclock.Options{})
					mustDo(t, err)
					defer func() {
						if err := ol.Err(); err != nil {
							t.Errorf("the lock at the new working directory: Err = %v", err)
						}
						mustDo(t, ol.Release())
					}()
				}
				c := locktest.Start(t, chdirHolder.Command(mech, a, b))
				line, err := c.Line()
				mustDo(t, err)
				if line != "HELD <nil>" {
					t.Fatalf("after the chdir the holder says %q; want HELD <nil>", line)
				}
				c.Stdin.Close()
				line, err = c.Line()
				mustDo(t, err)
				if line != "RELEASED <nil>" {
					t.Errorf("Release: %q", line)
				}
				mustDo(t, c.Wait())
				left, err := os.ReadDir(a)
				mustDo(t, err)
				for _, e := range left {
					if e.Name() != "app.lock" || mech == "file" {
						t.Errorf("left in the lock's directory after Release: %s", e.Name())
					}
				}
				if other {
					names := []string{"app.lock"}
					if mech == "sqlite" {
						names = append(names, "app.lock.holder")
					}
					for _, n := range names {
						if _, err := os.Lstat(filepath.Join(b, n)); err != nil {
							t.Errorf("the other lock's %s: %v", n, err)
						}
					}
				}
			})
		}
	}
}
