package proclock_test

import (
	"context"
	"errors"
	"os"
	"runtime"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// lossCase is one way a held lock is lost, staged through the world's own
// view of the filesystem (as a user's rm or a tmp cleaner would act);
// want is the cause Err must match.
type lossCase struct {
	name   string
	sqlite bool // only for the SQLite mechanism (the mark)
	// file: only for the file mechanism. A SQLite holder's file may be
	// written over without loss: its kernel lock and its mark exclude.
	file  bool
	stage func(t *testing.T, fsys lockfs.FS, path string)
	want  error
}

func writeFile(t *testing.T, fsys lockfs.FS, name string, data []byte) {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
}

func mustDo(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

var lossCases = []lossCase{
	{name: "file removed", want: proclock.ErrRemoved, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		mustDo(t, fsys.Remove(path))
	}},
	{name: "mark removed", sqlite: true, want: proclock.ErrRemoved, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		mustDo(t, fsys.Remove(path+".holder"))
	}},
	{name: "file renamed away", want: proclock.ErrRemoved, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		mustDo(t, fsys.Rename(path, path+".old"))
	}},
	{name: "file renamed over", want: proclock.ErrReplaced, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		writeFile(t, fsys, path+".new", nil)
		mustDo(t, fsys.Rename(path+".new", path))
	}},
	{name: "mark renamed over", sqlite: true, want: proclock.ErrReplaced, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		writeFile(t, fsys, path+".new", []byte(`{"pid":1}`))
		mustDo(t, fsys.Rename(path+".new", path+".holder"))
	}},
	{name: "stamp written over", file: true, want: proclock.ErrReplaced, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		f, err := fsys.OpenFile(path, os.O_RDWR|os.O_TRUNC, 0)
		mustDo(t, err)
		f.Write([]byte("12345\n"))
		mustDo(t, f.Close())
	}},
	{name: "directory removed", want: proclock.ErrRemoved, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		// rm -rf: every entry, then the directory.
		fsys.Remove(path + ".holder")
		mustDo(t, fsys.Remove(path))
		mustDo(t, fsys.Remove("/locks"))
	}},
	{name: "directory moved", want: proclock.ErrRemoved, stage: func(t *testing.T, fsys lockfs.FS, path string) {
		mustDo(t, fsys.Rename("/locks", "/moved"))
	}},
}

// lossWorld is a fake world with /locks and a holder of /locks/app.lock
// through the mechanism asked for.
func lossWorld(t *testing.T, file bool) (*fake.World, *fake.Process, *platform.Platform, *proclock.Lock) {
	t.Helper()
	w := fake.New()
	mustDo(t, w.Mkdir("/locks", 0o755))
	proc := w.Spawn()
	p := proc.Platform()
	if file {
		p = p.WithoutSQLite()
	}
	l, err := proclock.Acquire(context.Background(), p, "/locks/app.lock", proclock.Options{})
	mustDo(t, err)
	return w, proc, p, l
}

// waitLost waits (in real time, bounded) for l's loss.
func waitLost(t *testing.T, l *proclock.Lock) {
	t.Helper()
	select {
	case <-l.Lost():
	case <-time.After(10 * time.Second):
		t.Fatalf("lock not told lost within 10 s; Err = %v", l.Err())
	}
}

// TestLostFake: every kind of loss, with both mechanisms, is told through
// Lost and Err, with its cause; the watch started before the loss.
func TestLostFake(t *testing.T) {
	for _, file := range []bool{false, true} {
		mech := map[bool]string{false: "sqlite", true: "file"}[file]
		for _, c := range lossCases {
			if c.sqlite && file || c.file && !file {
				continue
			}
			t.Run(mech+"/"+c.name, func(t *testing.T) {
				w, _, _, l := lossWorld(t, file)
				if err := l.Err(); err != nil {
					t.Fatalf("Err of a whole lock = %v; want nil", err)
				}
				select {
				case <-l.Lost():
					t.Fatal("Lost closed on a whole lock")
				default:
				}
				c.stage(t, w.FS(), l.Path())
				waitLost(t, l)
				err := l.Err()
				var le *proclock.LostError
				if !errors.As(err, &le) || le.Path != l.Path() || !errors.Is(err, proclock.ErrLost) || !errors.Is(err, c.want) {
					t.Fatalf("Err = %v; want a *LostError for %s matching ErrLost and %v", err, l.Path(), c.want)
				}
				l.Release()
				if !errors.Is(l.Err(), proclock.ErrLost) {
					t.Fatalf("Err after Release of a lost lock = %v; want the loss still", l.Err())
				}
			})
		}
	}
}

// TestLostBeforeWatching: a loss that happened before the first Lost or
// Err is seen by that first call, at once.
func TestLostBeforeWatching(t *testing.T) {
	for _, file := range []bool{false, true} {
		w, _, _, l := lossWorld(t, file)
		mustDo(t, w.FS().Remove(l.Path()))
		if err := l.Err(); !errors.Is(err, proclock.ErrRemoved) {
			t.Fatalf("file %v: first Err after the removal = %v; want ErrRemoved", file, err)
		}
		select {
		case <-l.Lost():
		default:
			t.Fatalf("file %v: Lost not closed after Err told of the loss", file)
		}
		l.Release()
	}
}

// TestLostByHook: a hook of the fake world, removing the lock's file just
// after the holder's process next looks at anything, stages the loss at a
// moment of the test's choosing; the way a user tests their reaction to
// loss (docs/testing.md).
func TestLostByHook(t *testing.T) {
	w, proc, p, l := lossWorld(t, false)
	if err := l.Err(); err != nil { // starts the watch
		t.Fatal(err)
	}
	removed := make(chan struct{})
	var once sync.Once
	remove := w.After("stat", "/locks/other", func(ev fake.Event) error {
		if ev.PID == proc.PID() {
			once.Do(func() {
				w.FS().Remove("/locks/app.lock")
				close(removed)
			})
		}
		return nil
	})
	defer remove()
	p.FS.Lstat("/locks/other")
	<-removed
	waitLost(t, l)
}

// TestLostNotByRelease: a clean Release never closes Lost, leaves Err nil,
// and ends the watch: no goroutine is left behind, and the lock's files,
// removed by the Release, are no loss.
func TestLostNotByRelease(t *testing.T) {
	for _, file := range []bool{false, true} {
		_, _, _, l := lossWorld(t, file)
		before := runtime.NumGoroutine()
		lost := l.Lost()
		if err := l.Release(); err != nil {
			t.Fatal(err)
		}
		if err := l.Err(); err != nil {
			t.Fatalf("file %v: Err after a clean Release = %v; want nil", file, err)
		}
		select {
		case <-lost:
			t.Fatalf("file %v: Lost closed by a clean Release", file)
		default:
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Fatalf("file %v: %d goroutines after Release, %d before watching", file, n, before)
		}
		// Asked for after Release: never closed, nothing started.
		select {
		case <-l.Lost():
			t.Fatalf("file %v: Lost after Release closed", file)
		default:
		}
		if n := runtime.NumGoroutine(); n > before {
			t.Fatalf("file %v: Lost after Release started a goroutine", file)
		}

	}
}

// TestLostConcurrent: goroutines asking Lost and Err while the lock is
// lost and released agree, under -race.
func TestLostConcurrent(t *testing.T) {
	for _, file := range []bool{false, true} {
		w, _, _, l := lossWorld(t, file)
		var wg sync.WaitGroup
		start := make(chan struct{})
		for range 8 {
			wg.Go(func() {
				<-start
				for range 50 {
					l.Err()
				}
				<-l.Lost()
				if !errors.Is(l.Err(), proclock.ErrRemoved) {
					t.Errorf("file %v: Err after Lost = %v", file, l.Err())
				}
			})
		}
		close(start)
		mustDo(t, w.FS().Remove(l.Path()))
		wg.Wait()
		l.Release()
	}
}

// TestLostPeriodicLookFake: a platform that cannot tell of changes (no
// ChangeWatcher: here no Wake at all) is looked at every second on its
// clock. On the fake world's frozen clock the look waits until the test
// moves time past it: the loss is not seen before, and is after.
func TestLostPeriodicLookFake(t *testing.T) {
	for _, file := range []bool{false, true} {
		w := fake.New()
		mustDo(t, w.Mkdir("/locks", 0o755))
		p := w.Spawn().Platform()
		p.Wake = nil
		if file {
			p = p.WithoutSQLite()
		}
		thaw := w.Freeze()
		l, err := proclock.Acquire(context.Background(), p, "/locks/app.lock", proclock.Options{})
		mustDo(t, err)
		mustDo(t, l.Err())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		mustDo(t, w.WaitSleepers(ctx, 1)) // the watch, sleeping until its look
		mustDo(t, w.FS().Remove(l.Path()))
		select {
		case <-l.Lost():
			t.Fatalf("file %v: told lost before the periodic look", file)
		default:
		}
		w.Advance(time.Second)
		waitLost(t, l)
		cancel()
		if !errors.Is(l.Err(), proclock.ErrRemoved) {
			t.Fatalf("file %v: Err = %v; want ErrRemoved", file, l.Err())
		}
		l.Release()
		thaw()
	}
}

// TestLostReleaseKeepsNewHoldersMark: a SQLite holder whose file and mark
// were removed (rm -f app.lock*) is lost, and another process takes the
// lock anew; the first one's Release, once it knows of the loss, leaves
// the new holder's mark alone, and the new holder stays held.
func TestLostReleaseKeepsNewHoldersMark(t *testing.T) {
	w, _, _, l := lossWorld(t, false)
	mustDo(t, l.Err())
	mustDo(t, w.FS().Remove(l.Path()))
	mustDo(t, w.FS().Remove(l.Path()+".holder"))
	waitLost(t, l)
	other := w.Spawn()
	l2, err := proclock.Acquire(context.Background(), other.Platform(), l.Path(), proclock.Options{})
	mustDo(t, err)
	defer l2.Release()
	l.Release()
	if _, err := w.FS().Lstat(l.Path() + ".holder"); err != nil {
		t.Fatalf("the new holder's mark after the lost holder's Release: %v", err)
	}
	for _, p := range []*platform.Platform{w.Spawn().Platform(), w.Spawn().Platform().WithoutSQLite()} {
		if _, err := proclock.Acquire(context.Background(), p, l.Path(), proclock.Options{}); !errors.Is(err, proclock.ErrHeld) {
			t.Fatalf("Acquire beside the new holder after the lost one's Release = %v; want held", err)
		}
	}
}
