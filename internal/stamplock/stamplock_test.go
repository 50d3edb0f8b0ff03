package stamplock_test

import (
	"bytes"
	"context"
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/stamplock"
	"github.com/proclock/proclock/lockfs"
)

const lockPath = "/tmp/app.lock"

// take makes one attempt for p, the way the root package does.
func take(p *fake.Process) (*stamplock.Lock, error) {
	return stamplock.Acquire(context.Background(), p.Platform(), p.Identity(), lockPath, false)
}

func mustTake(t *testing.T, p *fake.Process) *stamplock.Lock {
	t.Helper()
	l, err := take(p)
	if err != nil {
		t.Fatalf("pid %d: Acquire: %v", p.PID(), err)
	}
	return l
}

// wantBusy checks that err says held, by holder (nil: unknown).
func wantBusy(t *testing.T, err error, holder *fake.Process) {
	t.Helper()
	busy, ok := errors.AsType[*lockrec.HeldError](err)
	if !ok {
		t.Fatalf("Acquire = %v; want *HeldError", err)
	}
	got := busy.Holder
	switch {
	case holder == nil && got != nil:
		t.Fatalf("holder %v; want unknown", got)
	case holder != nil && (got == nil || got.PID != holder.PID()):
		t.Fatalf("holder %v; want pid %d", got, holder.PID())
	}
}

func contents(t *testing.T, w *fake.World, name string) []byte {
	t.Helper()
	b, err := w.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeFile(t *testing.T, fsys lockfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.OpenFile(name, fsx.CreateExcl, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
}

// A reclaimer stalled after its probe, while another reclaims the dead
// holder's file and takes the lock, must not remove the new holder's file
// when it wakes.
func TestStalledReclaimerSparesNewHolder(t *testing.T) {
	w := fake.New()
	dead := w.Spawn()
	mustTake(t, dead)
	dead.Kill()
	stalled, quick := w.Spawn(), w.Spawn()

	probed := make(chan struct{})
	resume := make(chan struct{})
	var once sync.Once
	guard := lockPath + lockrec.GuardSuffix
	w.Before("open", "", func(ev fake.Event) error {
		// The guard, or the temporary file its stamp is written in
		// before it is linked in place.
		if ev.PID == stalled.PID() && (ev.Path == guard || strings.HasPrefix(ev.Path, guard+lockrec.TempSuffix+"-")) {
			once.Do(func() {
				close(probed)
				<-resume
			})
		}
		return nil
	})
	result := make(chan error, 1)
	go func() {
		_, err := take(stalled)
		result <- err
	}()
	<-probed // stalled has judged the dead holder's file stale
	winner := mustTake(t, quick)
	want := contents(t, w, lockPath)
	close(resume)
	wantBusy(t, <-result, quick)
	if got := contents(t, w, lockPath); !bytes.Equal(got, want) {
		t.Fatalf("the new holder's file changed:\n got %s\nwant %s", got, want)
	}
	if err := winner.Release(); err != nil {
		t.Fatalf("the new holder's Release: %v", err)
	}
}

// A stamp that replaces ours between writing and reading back wins: the
// attempt reports it held by the late stamp's holder, and leaves it.
func TestStampReplacedBeforeReread(t *testing.T) {
	w := fake.New()
	slow, late := w.Spawn(), w.Spawn()
	lateStamp := lockrec.Record{Format: lockrec.Format, Identity: late.Identity(), AcquiredAt: w.Now(), Nonce: "late"}.Marshal()
	w.After("rename-noreplace", "", func(ev fake.Event) error {
		if ev.PID == slow.PID() && ev.NewPath == lockPath {
			// What a reclaimer that judged slow's file stale does.
			if err := w.FS().Remove(lockPath); err != nil {
				return err
			}
			writeFile(t, w.FS(), lockPath, lateStamp)
		}
		return nil
	})
	_, err := take(slow)
	wantBusy(t, err, late)
	if got := contents(t, w, lockPath); !bytes.Equal(got, lateStamp) {
		t.Fatalf("late stamp replaced by %s", got)
	}
}

// A crash at any instant of writing the stamp keeps no one out: the
// stamp is written whole in a temporary file and renamed in place (or,
// on a filesystem without renameat2's RENAME_NOREPLACE, linked), so the
// crashed writer leaves, at most, its temporary file, and the next
// process takes the lock at once, on the same clock (docs/protocol.md,
// "Every record appears whole"). On the code that created the lock file
// and then wrote it, this left an empty file, held for 30 s.
func TestCrashWritingStampKeepsNoOneOut(t *testing.T) {
	for _, at := range []string{"open", "write", "rename-noreplace", "link"} {
		t.Run(string(at), func(t *testing.T) {
			w := fake.New()
			if at == "link" {
				noRenameNoReplace(w)
			}
			crasher, next := w.Spawn(), w.Spawn()
			w.After(at, "", func(ev fake.Event) error {
				if ev.PID == crasher.PID() && strings.HasPrefix(ev.Path, lockPath) {
					crasher.Kill()
				}
				return nil
			})
			if _, err := take(crasher); err == nil {
				// (Its error may be any: the steps of a killed process
				// fail, and it reads what it cannot read as held.)
				t.Fatalf("crashing Acquire succeeded")
			}
			if got, err := w.ReadFile(lockPath); err == nil && len(got) == 0 {
				t.Fatalf("the crash left an empty lock file")
			}
			l := mustTake(t, next)
			if err := l.Release(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// An empty lock file that another tool (or a proclock on a filesystem
// without hard links) left: held, holder unknown, for 30 s to the
// nanosecond, then reclaimed.
func TestEmptyFileHeldFor30s(t *testing.T) {
	w := fake.New()
	next := w.Spawn()
	writeFile(t, w.FS(), lockPath, nil)
	w.Advance(stamplock.UnstampedWindow)
	_, err := take(next)
	wantBusy(t, err, nil)
	w.Advance(time.Nanosecond)
	l := mustTake(t, next)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// Release removes only the file this holder created: a replacement
// survives, and Release says the lock was lost.
func TestReleaseSparesReplacement(t *testing.T) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	l := mustTake(t, a)
	if err := w.FS().Remove(lockPath); err != nil {
		t.Fatal(err)
	}
	other := lockrec.Record{Format: lockrec.Format, Identity: b.Identity(), AcquiredAt: w.Now(), Nonce: "b"}.Marshal()
	writeFile(t, w.FS(), lockPath, other)
	if err := l.Release(); !errors.Is(err, stamplock.ErrLost) {
		t.Fatalf("Release of a replaced file = %v; want ErrLost", err)
	}
	if got := contents(t, w, lockPath); !bytes.Equal(got, other) {
		t.Fatalf("replacement changed to %s", got)
	}
}

// Stale guards left by crashed reclaimers, nested as deep as guards go,
// never wedge the lock.
func TestStaleGuardsDoNotWedge(t *testing.T) {
	w := fake.New()
	dead := w.Spawn()
	stale := lockrec.Record{Format: lockrec.Format, Identity: dead.Identity(), AcquiredAt: w.Now(), Nonce: "dead"}.Marshal()
	dead.Kill()
	name := lockPath
	for range 4 {
		writeFile(t, w.FS(), name, stale)
		name += lockrec.GuardSuffix
	}
	p := w.Spawn()
	l := mustTake(t, p)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}

// Files that are not stamps, of every kind, are judged without blocking,
// without following links and without touching what a link points to.
func TestOddFilesAtPath(t *testing.T) {
	for _, tc := range []struct {
		name  string
		stage func(t *testing.T, w *fake.World)
	}{
		{"fifo", func(t *testing.T, w *fake.World) {
			if err := w.Mknod(lockPath, fs.ModeNamedPipe|0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"socket", func(t *testing.T, w *fake.World) {
			if err := w.Mknod(lockPath, fs.ModeSocket|0o644); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to a victim", func(t *testing.T, w *fake.World) {
			writeFile(t, w.FS(), "/tmp/victim", []byte("precious"))
			if err := w.Symlink("/tmp/victim", lockPath); err != nil {
				t.Fatal(err)
			}
		}},
		{"symlink to itself", func(t *testing.T, w *fake.World) {
			if err := w.Symlink(lockPath, lockPath); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := fake.New()
			tc.stage(t, w)
			p := w.Spawn()
			for _, age := range []time.Duration{0, 24 * time.Hour} {
				w.Advance(age)
				if l, err := take(p); !errors.Is(err, lockrec.ErrNotLockFile) {
					if err == nil {
						l.Release()
					}
					t.Fatalf("Acquire on a %s %v old = %v; want not a lock file", tc.name, age, err)
				}
			}
			if _, err := w.FS().Lstat(lockPath); err != nil {
				t.Fatalf("the %s at the path is gone: %v", tc.name, err)
			}
			if info, err := w.FS().Lstat("/tmp/victim"); err == nil {
				if got := contents(t, w, "/tmp/victim"); string(got) != "precious" || info.Size() != 8 {
					t.Fatalf("victim changed to %q", got)
				}
			}
		})
	}
}

// A lock file this process may not read is neither held nor stale: the
// permission error comes back, and the file is left.
func TestUnreadableLockFileIsAnError(t *testing.T) {
	w := fake.New()
	holder, p := w.Spawn(), w.Spawn()
	mustTake(t, holder)
	w.Before("open", lockPath, func(ev fake.Event) error {
		if ev.PID == p.PID() {
			return syscall.EACCES
		}
		return nil
	})
	_, err := take(p)
	if !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Acquire = %v; want a permission error", err)
	}
	if _, err := stamplock.Look(p.Platform(), p.Identity(), lockPath, false); !errors.Is(err, fs.ErrPermission) {
		t.Fatalf("Look = %v; want a permission error", err)
	}
}

// A directory at the path is an error wrapping *fs.PathError.
func TestDirectoryAtPath(t *testing.T) {
	w := fake.New()
	if err := w.Mkdir(lockPath, 0o755); err != nil {
		t.Fatal(err)
	}
	p := w.Spawn()
	_, err := take(p)
	if _, ok := errors.AsType[*fs.PathError](err); !ok || !errors.Is(err, lockfs.ErrIsDir) {
		t.Fatalf("Acquire on a directory = %v; want *fs.PathError with EISDIR", err)
	}
}

// noRenameNoReplace makes w's filesystem one without renameat2's
// RENAME_NOREPLACE (EINVAL), where records are linked into place.
func noRenameNoReplace(w *fake.World) {
	w.Before("rename-noreplace", "", func(fake.Event) error { return syscall.EINVAL })
}

// Where renameat2's RENAME_NOREPLACE is missing, the stamp is linked in
// place, and the temporary name removed: the lock is taken, nothing else
// is left, and a second attempt finds it held.
func TestStampLinkedWithoutRenameNoReplace(t *testing.T) {
	w := fake.New()
	noRenameNoReplace(w)
	var links, renames atomic.Int32
	w.After("link", "", func(ev fake.Event) error {
		if ev.Err == nil {
			links.Add(1)
		}
		return nil
	})
	w.After("rename-noreplace", "", func(ev fake.Event) error {
		if ev.Err == nil {
			renames.Add(1)
		}
		return nil
	})
	a, b := w.Spawn(), w.Spawn()
	l := mustTake(t, a)
	if links.Load() != 1 || renames.Load() != 0 {
		t.Errorf("stamp placed by %d links and %d renames, want 1 link", links.Load(), renames.Load())
	}
	d, err := w.FS().OpenNoFollow(filepath.Dir(lockPath))
	if err != nil {
		t.Fatal(err)
	}
	names, err := d.(interface{ Readdirnames(int) ([]string, error) }).Readdirnames(-1)
	d.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(names) != 1 || names[0] != filepath.Base(lockPath) {
		t.Errorf("directory holds %q, want only the lock file", names)
	}
	_, err = take(b)
	wantBusy(t, err, a)
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
}
