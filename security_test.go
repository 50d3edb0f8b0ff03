//go:build linux || darwin || freebsd

package proclock_test

import (
	"context"
	"errors"
	"fmt"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/internal/stamplock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Security (issue 5, item 5) on the real filesystem: nothing is ever
// written through an attacker's symlink, and the modes of the files locks
// create are the documented ones (docs/security.md). These run where the
// native platform has both mechanisms: linux, darwin, freebsd.

// secAge sets the times of path itself (not of what a symlink names) back
// past the 30 s window of an unreadable lock file.
func secAge(t *testing.T, path string) {
	t.Helper()
	then := unix.NsecToTimeval(time.Now().Add(-stamplock.UnstampedWindow - time.Minute).UnixNano())
	if err := unix.Lutimes(path, []unix.Timeval{then, then}); err != nil {
		t.Fatal(err)
	}
}

func secSymlink(t *testing.T, target, name string) {
	t.Helper()
	if err := os.Symlink(target, name); err != nil {
		t.Fatal(err)
	}
}

// secDeadStamp writes at path the stamp of a holder killed with kill -9:
// this host and boot, a pid that is gone.
func secDeadStamp(t *testing.T, path string) {
	t.Helper()
	id, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatal(err)
	}
	id.PID, id.StartTime = locktest.DeadPID(t), 0
	data := lockrec.Record{Format: lockrec.Format, Identity: id, AcquiredAt: time.Now(), Nonce: "dead"}.Marshal()
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestSymlinkAtPathNotFollowed: an attacker's symlink at the lock's path,
// to an existing victim or to a name where a victim would be created, is
// never written through, nor removed. SQLite, which would follow it,
// refuses it (sqlitelock.ErrSymlink); the file mechanism refuses it as not
// a lock file, however old (docs/security.md, "Symlinks").
func TestSymlinkAtPathNotFollowed(t *testing.T) {
	ctx := context.Background()
	for _, mech := range mechanisms {
		for _, missing := range []bool{false, true} {
			name := string(mech) + "/to a victim"
			if missing {
				name = string(mech) + "/to a missing file"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path := filepath.Join(dir, "x.lock")
				v := locktest.NewVictim(t, dir)
				target := v.Path
				if missing {
					target = filepath.Join(dir, "would-be-created")
				}
				secSymlink(t, target, path)
				p := nativePlatform(mech)

				l, err := proclock.Acquire(ctx, p, path, proclock.Options{RemoveOnRelease: true})
				switch mech {
				case proclock.MechanismSQLite:
					if err == nil {
						l.Release()
						t.Fatal("Acquire locked through a symlink")
					}
					if _, ok := errors.AsType[*fs.PathError](err); !ok || !errors.Is(err, sqlitelock.ErrSymlink) || errors.Is(err, proclock.ErrHeld) {
						t.Fatalf("Acquire = %v; want a *fs.PathError matching sqlitelock.ErrSymlink", err)
					}
					if _, err := proclock.IsHeld(ctx, p, path); !errors.Is(err, sqlitelock.ErrSymlink) {
						t.Fatalf("IsHeld = %v; want sqlitelock.ErrSymlink", err)
					}
					if info, err := os.Lstat(path); err != nil || info.Mode()&fs.ModeSymlink == 0 {
						t.Fatalf("the symlink at the path is gone: %v, %v", info, err)
					}
				case proclock.MechanismFile:
					// Not a lock file, however old: never taken, never
					// removed.
					for range 2 {
						if err == nil {
							l.Release()
						}
						if !errors.Is(err, proclock.ErrNotLockFile) {
							t.Fatalf("Acquire on a symlink = %v; want an error matching ErrNotLockFile", err)
						}
						secAge(t, path)
						l, err = proclock.Acquire(ctx, p, path, proclock.Options{})
					}
					if info, err := os.Lstat(path); err != nil || info.Mode()&fs.ModeSymlink == 0 {
						t.Fatalf("the symlink at the path is gone: %v, %v", info, err)
					}
				}
				v.Check(t)
				if _, err := os.Lstat(filepath.Join(dir, "would-be-created")); !errors.Is(err, fs.ErrNotExist) {
					t.Fatalf("a file was created through the symlink: %v", err)
				}
			})
		}
	}
}

// TestSymlinkAtHolderReplaced: a symlink at <path>.holder is removed (it
// names no live holder) and replaced by the holder's record, never followed;
// Release removes the record, and the victim is untouched throughout.
func TestSymlinkAtHolderReplaced(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	v := locktest.NewVictim(t, dir)
	secSymlink(t, v.Path, path+lockrec.MarkSuffix)
	l, err := proclock.Acquire(context.Background(), nativePlatform(proclock.MechanismSQLite), path, proclock.Options{RemoveOnRelease: true})
	if err != nil {
		t.Fatal(err)
	}
	info, err := os.Lstat(path + lockrec.MarkSuffix)
	if err != nil || !info.Mode().IsRegular() {
		t.Fatalf(".holder is %v, %v; want a regular file in place of the symlink", info, err)
	}
	if r := lockrec.ReadHolder(lockfs.OS(), path); r == nil || r.PID != os.Getpid() {
		t.Fatalf(".holder says %+v; want this process", r)
	}
	v.Check(t)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path + lockrec.MarkSuffix); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf(".holder after Release: %v; want it removed", err)
	}
	v.Check(t)
}

// TestSymlinkAtGuardNotFollowed: a symlink at the reclaim guard
// (<path>.stale), planted beside a dead holder's file, is not followed and
// not removed, however old: it is not a lock file, so no reclaim runs (and
// the dead holder's file stays) until someone removes it.
func TestSymlinkAtGuardNotFollowed(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	guard := path + lockrec.GuardSuffix
	v := locktest.NewVictim(t, dir)
	secDeadStamp(t, path)
	secSymlink(t, v.Path, guard)
	for _, mech := range []proclock.Mechanism{proclock.MechanismFile, proclock.MechanismSQLite} {
		p := nativePlatform(mech)
		for range 2 {
			if l, err := proclock.Acquire(ctx, p, path, proclock.Options{}); !errors.Is(err, proclock.ErrNotLockFile) {
				if err == nil {
					l.Release()
				}
				t.Fatalf("%s: Acquire beside a symlinked guard = %v; want an error matching ErrNotLockFile", mech, err)
			}
			v.Check(t)
			secAge(t, guard)
		}
	}
	if info, err := os.Lstat(guard); err != nil || info.Mode()&fs.ModeSymlink == 0 {
		t.Fatalf("the symlink at the guard is gone: %v, %v", info, err)
	}
	os.Remove(guard)
	l, err := proclock.Acquire(ctx, nativePlatform(proclock.MechanismFile), path, proclock.Options{})
	if err != nil {
		t.Fatalf("Acquire once the symlink is gone: %v", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	v.Check(t)
	secOnly(t, dir, "victim")
}

// secOnly fails unless dir holds exactly the names given.
func secOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range entries {
		got = append(got, e.Name())
	}
	if strings.Join(got, " ") != strings.Join(names, " ") {
		t.Fatalf("%s holds %q; want %q", dir, got, names)
	}
}

// secPlantingFS is the native FS with an attacker who guesses the random
// names proclock creates or renames to: just before a file is created at,
// or renamed to, a name starting with prefix, a symlink to target appears
// there.
type secPlantingFS struct {
	lockfs.FS
	prefix, target string

	mu      sync.Mutex
	planted []string
}

func (s *secPlantingFS) plant(name string) {
	if !strings.HasPrefix(name, s.prefix) {
		return
	}
	if os.Symlink(s.target, name) == nil {
		s.mu.Lock()
		s.planted = append(s.planted, name)
		s.mu.Unlock()
	}
}

func (s *secPlantingFS) OpenFile(name string, flag int, perm os.FileMode) (lockfs.File, error) {
	if flag&os.O_CREATE != 0 {
		s.plant(name)
	}
	return s.FS.OpenFile(name, flag, perm)
}

func (s *secPlantingFS) Rename(oldname, newname string) error {
	s.plant(newname)
	return s.FS.Rename(oldname, newname)
}

// TestGuessedTemporaryNamesNotFollowed: the private name a stale guard is
// renamed to is random; an attacker who guesses one anyway and plants a
// symlink there still writes nothing through it: a rename replaces a
// symlink rather than following it. No lock is left held.
func TestGuessedTemporaryNamesNotFollowed(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		mech   proclock.Mechanism
		prefix string // of the guessed name, after the lock's path
		stage  func(t *testing.T, path string)
	}{
		{"a stale guard's private name", proclock.MechanismFile, lockrec.GuardSuffix + lockrec.GuardSuffix + "-", func(t *testing.T, path string) {
			secDeadStamp(t, path)
			secDeadStamp(t, path+lockrec.GuardSuffix)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "x.lock")
			v := locktest.NewVictim(t, dir)
			tc.stage(t, path)
			p := nativePlatform(tc.mech)
			fsys := &secPlantingFS{FS: p.FS, prefix: path + tc.prefix, target: v.Path}
			p.FS = fsys
			l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
			if err == nil {
				// Taking the lock anyway is fine, as long as nothing
				// went through the link.
				if rerr := l.Release(); rerr != nil {
					t.Fatal(rerr)
				}
			}
			if len(fsys.planted) == 0 {
				t.Fatalf("no name with prefix %s was used: the test proves nothing (Acquire: %v)", fsys.prefix, err)
			}
			v.Check(t)
			if held, err := proclock.IsHeld(ctx, nativePlatform(tc.mech), path); err != nil || held {
				t.Fatalf("after the attempt IsHeld = %v, %v; want free", held, err)
			}
			l, err = proclock.Acquire(ctx, nativePlatform(tc.mech), path, proclock.Options{})
			if err != nil {
				t.Fatalf("a later Acquire: %v", err)
			}
			l.Release()
			v.Check(t)
		})
	}
}

// secSpyFS records the permission bits of every file created through it,
// right after creating it: the guard file lives only during a reclaim.
type secSpyFS struct {
	lockfs.FS
	mu    sync.Mutex
	modes map[string]fs.FileMode
}

func (s *secSpyFS) OpenFile(name string, flag int, perm os.FileMode) (lockfs.File, error) {
	f, err := s.FS.OpenFile(name, flag, perm)
	if err == nil && flag&os.O_CREATE != 0 {
		if info, serr := os.Lstat(name); serr == nil {
			s.mu.Lock()
			// A temporary file is its record's, to be linked in place.
			key := filepath.Base(name)
			if i := strings.LastIndex(key, lockrec.TempSuffix+"-"); i >= 0 {
				key = key[:i]
			}
			s.modes[key] = info.Mode().Perm()
			s.mu.Unlock()
		}
	}
	return f, err
}

// TestFileModes: lock files, guard files and .holder are created 0664
// before the umask (docs/security.md), so with the usual umask 022 another
// user may read who holds a lock but write none of its files, with umask
// 002 the group may write them too, umask 077 makes them private, and no
// umask, not even 000, makes them world-writable. (umask is process-wide:
// this test must not run in parallel.)
func TestFileModes(t *testing.T) {
	const chosen fs.FileMode = 0o664
	// One mode serves the lock file, its guard and .holder.
	if lockrec.FileMode != chosen {
		t.Fatalf("mode %v; docs/security.md documents %v", lockrec.FileMode, chosen)
	}
	ctx := context.Background()
	for _, mask := range []int{0o022, 0o002, 0o077, 0} {
		want := chosen &^ fs.FileMode(mask)
		if want&0o002 != 0 {
			t.Fatalf("umask %03o would make files world-writable (%v)", mask, want)
		}
		t.Run(fmt.Sprintf("umask %03o", mask), func(t *testing.T) {
			defer syscall.Umask(syscall.Umask(mask))
			t.Run("file", func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "x.lock")
				l, err := proclock.Acquire(ctx, nativePlatform(proclock.MechanismFile), path, proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
				secWantMode(t, path, want)
			})
			t.Run("file guard", func(t *testing.T) {
				dir := t.TempDir()
				path := filepath.Join(dir, "x.lock")
				secDeadStamp(t, path) // so that Acquire converts it under a guard
				p := nativePlatform(proclock.MechanismFile)
				spy := &secSpyFS{FS: p.FS, modes: map[string]fs.FileMode{}}
				p.FS = spy
				l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
				if got, ok := spy.modes["x.lock"+lockrec.GuardSuffix]; !ok || got != want {
					t.Errorf("guard file created %v (seen: %v); want %v", got, ok, want)
				}
			})
			t.Run("sqlite holder", func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "x.lock")
				l, err := proclock.Acquire(ctx, nativePlatform(proclock.MechanismSQLite), path, proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
				secWantMode(t, path+lockrec.MarkSuffix, want)
			})
			t.Run("sqlite database", func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "x.lock")
				l, err := proclock.Acquire(ctx, nativePlatform(proclock.MechanismSQLite), path, proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
				secWantMode(t, path, want)
			})
		})
	}
}

func secWantMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := info.Mode(); !got.IsRegular() || got.Perm() != want {
		t.Errorf("%s has mode %v; want %v", filepath.Base(path), got, want)
	}
}
