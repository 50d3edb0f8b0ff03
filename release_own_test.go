package proclock_test

import (
	"context"
	"errors"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// heldForBoth fails t unless a fresh process of each mechanism finds the
// lock at path held.
func heldForBoth(t *testing.T, w *fake.World, path, when string) {
	t.Helper()
	for _, p := range []*platform.Platform{w.Spawn().Platform(), w.Spawn().Platform().WithoutSQLite()} {
		l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
		if err == nil {
			l.Release()
			t.Fatalf("%s: a third process (SQLite %v) took the lock: two holders", when, p.SQLite != nil)
		}
		if !errors.Is(err, proclock.ErrHeld) {
			t.Fatalf("%s: a third process: %v; want held", when, err)
		}
	}
}

// TestReleaseKeepsConvertedStamp (issue 29, item 2): a file-mechanism
// holder's stamp written over in place (the empty database, or `: >` and
// 30 s) is lost; a second file process converts that same inode and
// holds it; the first holder's Release must not remove it, or a third
// process holds beside the second.
func TestReleaseKeepsConvertedStamp(t *testing.T) {
	for _, c := range []struct {
		name string
		data []byte
		wait time.Duration
	}{
		{"empty database written over", lockrec.EmptyDatabase(), 0},
		{"emptied", nil, 31 * time.Second},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, _, _, l := lossWorld(t, true)
			writeFile(t, w.FS(), l.Path(), c.data) // in place: O_TRUNC
			waitLost(t, l)
			w.Advance(c.wait)
			l2, err := proclock.Acquire(context.Background(), w.Spawn().Platform().WithoutSQLite(), l.Path(), proclock.Options{})
			if err != nil {
				t.Fatalf("a second file process after the loss: %v; want the lock", err)
			}
			if err := l.Release(); err == nil {
				t.Errorf("the lost holder's Release = nil; want an error: its stamp is gone")
			}
			heldForBoth(t, w, l.Path(), "after the lost holder's Release")
			if err := l2.Release(); err != nil {
				t.Fatalf("the second holder's Release: %v", err)
			}
		})
	}
}

// TestReleaseLocksItsCheck (issue 29, item 2): the stamp written over
// and converted by another between Release's look at its file and its
// removal: Release looks and removes under SQLite's lock on the file,
// under which alone a convert writes, so the convert fails held and
// never holds a file Release then removes.
func TestReleaseLocksItsCheck(t *testing.T) {
	w, proc, _, l := lossWorld(t, true)
	reached, release := stallOnce(w, proc, "remove", l.Path())
	done := make(chan error)
	go func() { done <- l.Release() }()
	<-reached
	writeFile(t, w.FS(), l.Path(), lockrec.EmptyDatabase())
	l2, err := proclock.Acquire(context.Background(), w.Spawn().Platform().WithoutSQLite(), l.Path(), proclock.Options{})
	if err != nil && !errors.Is(err, proclock.ErrHeld) {
		t.Fatalf("a second file process during the Release: %v", err)
	}
	close(release)
	<-done
	if l2 == nil {
		l2, err = proclock.Acquire(context.Background(), w.Spawn().Platform().WithoutSQLite(), l.Path(), proclock.Options{})
		if err != nil {
			t.Fatalf("a second file process after the Release: %v", err)
		}
	}
	heldForBoth(t, w, l.Path(), "the second process holding")
	mustDo(t, l2.Release())
}

// TestFailedReleaseDoesNotWedge (issue 29, item 3): a file-mechanism
// holder whose Release cannot remove its file (a read-only directory)
// keeps others out while it lives, but takes the lock again itself: its
// own stamp, of no live Lock, is its leftover. Once it is gone, or its
// Release is retried, others take it.
func TestFailedReleaseDoesNotWedge(t *testing.T) {
	for _, then := range []string{"exits", "retries"} {
		t.Run(then, func(t *testing.T) {
			w, proc, p, l := lossWorld(t, true)
			readOnly := true
			w.Before("remove", l.Path(), func(ev fake.Event) error {
				if readOnly && ev.PID == proc.PID() {
					return syscall.EROFS
				}
				return nil
			})
			if err := l.Release(); !errors.Is(err, syscall.EROFS) {
				t.Fatalf("Release in a read-only directory: %v; want EROFS", err)
			}
			heldForBoth(t, w, l.Path(), "after the failed Release")
			for i := range 2 {
				again, err := proclock.Acquire(context.Background(), p, l.Path(), proclock.Options{})
				if err != nil {
					t.Fatalf("the same process, %d after its failed Release: %v; want the lock", i+1, err)
				}
				heldForBoth(t, w, l.Path(), "the same process holding again")
				if err := again.Release(); !errors.Is(err, syscall.EROFS) {
					t.Fatalf("its Release again: %v; want EROFS", err)
				}
			}
			if then == "exits" {
				proc.Kill()
			} else {
				readOnly = false
				if err := l.Release(); err == nil {
					t.Errorf("the first Lock's retry = nil; want an error: the file holds the later Lock's stamp")
				}
				if _, err := w.FS().Lstat(l.Path()); err != nil {
					t.Fatalf("the later Lock's file after the first Lock's retry: %v", err)
				}
				l3, err := proclock.Acquire(context.Background(), p, l.Path(), proclock.Options{})
				mustDo(t, err)
				mustDo(t, l3.Release())
			}
			for _, q := range []*platform.Platform{w.Spawn().Platform(), w.Spawn().Platform().WithoutSQLite()} {
				l4, err := proclock.Acquire(context.Background(), q, l.Path(), proclock.Options{})
				if err != nil {
					t.Fatalf("another process once the holder %s: %v; want the lock", then, err)
				}
				mustDo(t, l4.Release())
			}
		})
	}
}
