package proclock_test

import (
	"context"
	"errors"
	"io/fs"
	"strings"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
)

// limitedFS is a fake world's FS with linux's path limits.
type limitedFS struct{ lockfs.FS }

func (limitedFS) PathLimits() (int, int) { return 4095, 255 }

// TestErrorsInPlainWords: Acquire's errors are one line, "proclock:
// acquire PATH: CAUSE", the cause in plain words, and match what they
// wrap (docs/design.md, "Errors in plain words").
func TestErrorsInPlainWords(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 200) + "/" + strings.Repeat("n", 256)
	for _, tc := range []struct {
		name  string
		path  string
		setup func(w *fake.World)
		fsys  func(lockfs.FS) lockfs.FS
		cause string
		is    error
	}{
		{name: "missing directory", path: "/tmp/nowhere/x.lock", cause: "no such directory", is: fs.ErrNotExist},
		{name: "directory", path: "/tmp/d", setup: func(w *fake.World) { w.Mkdir("/tmp/d", 0o755) }, cause: "is a directory", is: lockfs.ErrIsDir},
		{name: "not a lock file", path: "/tmp/s", setup: func(w *fake.World) { w.WriteFile("/tmp/s", []byte("#!/bin/sh\n"), 0o755) },
			cause: "not a lock file: proclock never changes it; lock another path", is: proclock.ErrNotLockFile},
		{name: "socket", path: "/tmp/sock", setup: func(w *fake.World) { w.Mknod("/tmp/sock", fs.ModeSocket|0o644) },
			cause: "not a lock file: proclock never changes it; lock another path", is: proclock.ErrNotLockFile},
		{name: "name too long", path: long, fsys: func(f lockfs.FS) lockfs.FS { return limitedFS{f} },
			cause: "name too long: the file name is 256 bytes, over the 255 this system takes", is: proclock.ErrPathTooLong},
		{name: "network filesystem", path: "/tmp/x.lock", fsys: func(f lockfs.FS) lockfs.FS { return &networkFS{f, fakeRanges{f.(lockfs.RangeLocker)}} },
			cause: "on a network filesystem (nfs), where locks are not reliable (Options.AllowNetworkFS locks there anyway)", is: proclock.ErrNetworkFS},
		{name: "empty path", path: "", cause: "empty path", is: fs.ErrInvalid},
	} {
		for _, mech := range mechanisms {
			t.Run(tc.name+"/"+string(mech), func(t *testing.T) {
				w := fake.New()
				if tc.setup != nil {
					tc.setup(w)
				}
				p := w.Spawn().Platform()
				if mech == proclock.MechanismFile {
					p = p.WithoutSQLite()
				}
				if tc.fsys != nil {
					p.FS = tc.fsys(p.FS)
				}
				_, err := proclock.Acquire(context.Background(), p, tc.path, proclock.Options{})
				if want := "proclock: acquire " + tc.path + ": " + tc.cause; err == nil || err.Error() != want {
					t.Errorf("Acquire: %v\nwant %s", err, want)
				}
				if !errors.Is(err, tc.is) {
					t.Errorf("Acquire: %v; want it to match %v", err, tc.is)
				}
				if _, ok := errors.AsType[*proclock.Error](err); !ok {
					t.Errorf("Acquire: %T; want a *proclock.Error", err)
				}
			})
		}
	}
}
