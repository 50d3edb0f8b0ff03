package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// nativeLossCases are the losses of TestLostNative, staged with the OS's
// own calls in dir, which holds the lock.
var nativeLossCases = []struct {
	name   string
	sqlite bool
	stage  func(t *testing.T, dir, path string)
	want   error
}{
	{"rm file", false, func(t *testing.T, dir, path string) { mustDo(t, os.Remove(path)) }, proclock.ErrRemoved},
	{"rm holder", true, func(t *testing.T, dir, path string) { mustDo(t, os.Remove(path+".holder")) }, proclock.ErrRemoved},
	{"rename over file", false, func(t *testing.T, dir, path string) {
		mustDo(t, os.WriteFile(path+".new", nil, 0o644))
		mustDo(t, os.Rename(path+".new", path))
	}, proclock.ErrReplaced},
	{"rename over holder", true, func(t *testing.T, dir, path string) {
		mustDo(t, os.WriteFile(path+".new", []byte(`{"pid":1}`), 0o644))
		mustDo(t, os.Rename(path+".new", path+".holder"))
	}, proclock.ErrReplaced},
	{"rm -rf directory", false, func(t *testing.T, dir, path string) { mustDo(t, os.RemoveAll(dir)) }, proclock.ErrRemoved},
	{"directory moved", false, func(t *testing.T, dir, path string) { mustDo(t, os.Rename(dir, dir+".moved")) }, proclock.ErrRemoved},
}

// nativeMechs are the two mechanisms on this OS's platform.
func nativeMechs() map[string]*platform.Platform {
	return map[string]*platform.Platform{"sqlite": platform.Native(), "file": platform.Native().WithoutSQLite()}
}

// TestLostNative: each loss, staged by this process with the OS's calls
// (as rm or a tmp cleaner would), is told through Lost by the inotify
// watch, with its cause; and a clean Release after watching leaves no
// goroutine behind.
func TestLostNative(t *testing.T) {
	for mech, p := range nativeMechs() {
		for _, c := range nativeLossCases {
			if c.sqlite && mech == "file" {
				continue
			}
			t.Run(mech+"/"+c.name, func(t *testing.T) {
				dir := filepath.Join(t.TempDir(), "locks")
				mustDo(t, os.Mkdir(dir, 0o755))
				l, err := proclock.Acquire(context.Background(), p, filepath.Join(dir, "app.lock"), proclock.Options{})
				mustDo(t, err)
				defer l.Release()
				if err := l.Err(); err != nil {
					t.Fatalf("Err of a whole lock = %v", err)
				}
				c.stage(t, dir, l.Path())
				waitLost(t, l)
				if err := l.Err(); !errors.Is(err, proclock.ErrLost) || !errors.Is(err, c.want) {
					t.Fatalf("Err = %v; want ErrLost and %v", err, c.want)
				}
			})
		}
	}
}

// TestLostNativeNoLeak: watched locks released cleanly, many at once from
// several goroutines, are never told lost, and leave no goroutine and no
// descriptor behind (the watch's inotify instance closes with the last).
func TestLostNativeNoLeak(t *testing.T) {
	for mech, p := range nativeMechs() {
		dir := t.TempDir()
		before, fds := runtime.NumGoroutine(), openFDs(t)
		var wg sync.WaitGroup
		for g := range 8 {
			wg.Go(func() {
				for i := range 20 {
					path := filepath.Join(dir, fmt.Sprintf("%d-%d.lock", g, i%3))
					l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{RemoveOnRelease: i%2 == 0})
					if err != nil {
						t.Error(err)
						return
					}
					lost := l.Lost()
					if err := l.Release(); err != nil {
						t.Error(err)
					}
					select {
					case <-lost:
						t.Errorf("%s: a lock released cleanly was told lost: %v", mech, l.Err())
					default:
					}
				}
			})
		}
		wg.Wait()
		n := runtime.NumGoroutine()
		for i := 0; i < 100_000 && n > before; i++ {
			runtime.Gosched() // goroutines that have returned, still exiting
			n = runtime.NumGoroutine()
		}
		if n > before {
			buf := make([]byte, 1<<16)
			t.Fatalf("%s: %d goroutines after the watched locks were released, %d before:\n%s", mech, n, before, buf[:runtime.Stack(buf, true)])
		}
		if n := openFDs(t); n != fds {
			t.Errorf("%s: %d descriptors open after the watched locks were released, %d before", mech, n, fds)
		}
	}
}

// TestLostTmpfsUnmounted: the filesystem under a held lock unmounted
// (lazily, as umount -l does: a held lock's open file keeps a plain
// unmount busy) is told through Lost, by the watch of the mount table.
func TestLostTmpfsUnmounted(t *testing.T) {
	for mech, p := range nativeMechs() {
		dir := t.TempDir()
		if err := unix.Mount("tmpfs", dir, "tmpfs", 0, "size=1m"); err != nil {
			t.Skipf("cannot mount a tmpfs here (needs root, CAP_SYS_ADMIN): %v", err)
		}
		mounted := true
		defer func() {
			if mounted {
				unix.Unmount(dir, unix.MNT_DETACH)
			}
		}()
		l, err := proclock.Acquire(context.Background(), p, filepath.Join(dir, "app.lock"), proclock.Options{})
		mustDo(t, err)
		if err := l.Err(); err != nil {
			t.Fatalf("%s: Err of a whole lock = %v", mech, err)
		}
		mustDo(t, unix.Unmount(dir, unix.MNT_DETACH))
		mounted = false
		start := time.Now()
		waitLost(t, l)
		t.Logf("%s: told lost %v after the unmount", mech, time.Since(start))
		if !errors.Is(l.Err(), proclock.ErrRemoved) {
			t.Fatalf("%s: Err = %v; want ErrRemoved", mech, l.Err())
		}
		l.Release()
	}
}
