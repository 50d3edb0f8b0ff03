package proclock_test

// Hard cases of the protocol for both mechanisms on one path
// (docs/protocol.md), found in review: each failed on the first version of
// the protocol, and asserts what the protocol promises.

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
)

// stallOnce blocks the first op on path by p until release is closed,
// and closes reached when it gets there.
func stallOnce(w *fake.World, p *fake.Process, op string, path string) (reached chan struct{}, release chan struct{}) {
	reached, release = make(chan struct{}), make(chan struct{})
	var once sync.Once
	w.Before(op, path, func(ev fake.Event) error {
		if ev.PID != p.PID() {
			return nil
		}
		hit := false
		once.Do(func() { hit = true })
		if hit {
			close(reached)
			<-release
		}
		return nil
	})
	return reached, release
}

// A SQLite holder with RemoveOnRelease removes the lock file, then its
// mark. Between the two, a second SQLite process creates a new lock file,
// locks it and finds the old mark, which one of the two cannot judge (it
// has no identity, or the holder has none). Were it to remove that mark and
// write its own, the first holder's release would remove the second's mark,
// and a file process would find the database without a mark and take the
// lock too. The mark names the file its writer locked, not the second's:
// the second leaves it, and reads the lock as held until the first is done.
func TestRemoveOnReleaseUnmarkRemovesNextHoldersMark(t *testing.T) {
	for _, unknown := range []string{"releasing holder", "next holder"} {
		t.Run(strings.ReplaceAll(unknown, " ", "_"), func(t *testing.T) {
			ctx := context.Background()
			w := fake.New()
			s1, s2, f := w.Spawn(), w.Spawn(), w.Spawn()
			if unknown == "releasing holder" {
				s1.FailIdentity(errors.New("no /proc"))
			} else {
				s2.FailIdentity(errors.New("no /proc"))
			}
			l1, err := proclock.Acquire(ctx, s1.Platform(), appLock, proclock.Options{RemoveOnRelease: true})
			if err != nil {
				t.Fatal(err)
			}
			reached, release := stallOnce(w, s1, "remove", appLock+".holder")
			done := make(chan error)
			go func() { done <- l1.Release() }()
			<-reached // s1 removed the lock file and is about to remove its mark

			if l2, err := proclock.Acquire(ctx, s2.Platform(), appLock, proclock.Options{}); !errors.Is(err, proclock.ErrHeld) {
				if err == nil {
					l2.Release()
				}
				t.Fatalf("s2 while s1 releases: %v; want held", err)
			}
			close(release)
			if err := <-done; err != nil {
				t.Fatal(err)
			}
			l2, err := proclock.Acquire(ctx, s2.Platform(), appLock, proclock.Options{})
			if err != nil {
				t.Fatalf("s2 once s1 has released: %v", err)
			}
			defer l2.Release()

			l3, err := proclock.Acquire(ctx, fileMech(f), appLock, proclock.Options{})
			if err == nil {
				l3.Release()
				t.Fatalf("a file process took the lock while SQLite process %d holds it: two holders", s2.PID())
			}
			if !errors.Is(err, proclock.ErrHeld) {
				t.Fatalf("file process: %v; want held", err)
			}
		})
	}
}

// A SQLite holder in another pid namespace (a container since restarted)
// is killed: its mark stays, and cannot be judged from here. A SQLite
// process here takes the kernel's lock on the very file the mark names, so
// the mark's writer holds nothing: it clears the mark and takes the lock,
// instead of reading it as held for ever.
func TestDeadMarkFromOtherPIDNamespace(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	other := w.NewPIDNamespace()
	s1 := other.Spawn()
	if _, err := proclock.Acquire(ctx, s1.Platform(), appLock, proclock.Options{}); err != nil {
		t.Fatal(err)
	}
	s1.Kill()
	w.Advance(24 * time.Hour)
	s2 := w.Spawn()
	l, err := proclock.Acquire(ctx, s2.Platform(), appLock, proclock.Options{})
	if err != nil {
		t.Fatalf("SQLite process after the holder (other pid namespace) was killed a day ago: %v; want the lock", err)
	}
	l.Release()
}

// TestKilledWhileMarkingKeepsNoOneOut (issue 19, "Why" 1): a SQLite
// holder killed at any instant of writing its mark, or a file process at
// any instant of writing its stamp or its guard, keeps no one out: the
// next process of either mechanism takes the lock at once, on the same
// clock. Each record is written whole in a temporary file and linked in
// place (docs/protocol.md, "Every record appears whole"); the code that
// created the mark (or the stamp, or the guard) and then wrote it left an
// empty file there, read as held for 30 s.
func TestKilledWhileMarkingKeepsNoOneOut(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		file  bool   // the killed process is a file-mechanism one
		stage bool   // a dead holder's stamp is there first: the killed one converts it, under the guard
		at    string // the record whose writing is cut
	}{
		{"mark", false, false, appLock + lockrec.MarkSuffix},
		{"stamp", true, false, appLock},
		{"guard", true, true, appLock + lockrec.GuardSuffix},
	} {
		for _, op := range []string{"open", "write", "rename-noreplace"} {
			for _, nextFile := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/next file mechanism %v", tc.name, op, nextFile), func(t *testing.T) {
					w := fake.New()
					if tc.stage {
						dead := w.Spawn()
						if _, err := proclock.Acquire(ctx, fileMech(dead), appLock, proclock.Options{}); err != nil {
							t.Fatal(err)
						}
						dead.Kill()
					}
					victim, next := w.Spawn(), w.Spawn()
					var killed atomic.Bool
					w.After(op, "", func(ev fake.Event) error {
						name := ev.Path
						if op == "rename-noreplace" {
							name = ev.NewPath
						}
						if ev.PID == victim.PID() && ev.Err == nil && (name == tc.at || strings.HasPrefix(name, tc.at+".new-")) {
							killed.Store(true)
							victim.Kill()
						}
						return nil
					})
					vp := victim.Platform()
					if tc.file {
						vp = fileMech(victim)
					}
					if _, err := proclock.Acquire(ctx, vp, appLock, proclock.Options{}); err == nil || !killed.Load() {
						t.Fatalf("the victim's Acquire = %v, killed %v; want it killed writing %s", err, killed.Load(), tc.at)
					}
					np := next.Platform()
					if nextFile {
						np = fileMech(next)
					}
					l, err := proclock.Acquire(ctx, np, appLock, proclock.Options{})
					if err != nil {
						t.Fatalf("the next process, on the same clock: %v; want the lock at once", err)
					}
					l.Release()
				})
			}
		}
	}
}

// A SQLite holder without an identity (its mark: "holder unknown") holds a
// file into which a file process wrote its stamp and died before backing
// off; then the holder dies too. File processes read the unknown mark as
// held; a SQLite process, meeting the dead stamp, clears it, takes the
// kernel's lock on the file the mark names, and so knows the mark for a
// leftover: the lock is not wedged. (Found by spin, docs/protocol.md.)
func TestDeadStampBesideUnknownMark(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	s1, f, s2 := w.Spawn(), w.Spawn(), w.Spawn()
	s1.FailIdentity(errors.New("no /proc"))
	if _, err := proclock.Acquire(ctx, s1.Platform(), appLock, proclock.Options{}); err != nil {
		t.Fatal(err)
	}
	// The file process stamps s1's file (as one that created it would
	// have, just before s1 locked it), and dies before it backs off.
	dead := lockrec.Record{Identity: f.Identity(), AcquiredAt: w.Now(), Nonce: "dead"}.Marshal()
	fh, err := w.FS().OpenFile(appLock, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write(dead)
	fh.Close()
	f.Kill()
	s1.Kill()
	w.Advance(time.Hour)
	l, err := proclock.Acquire(ctx, s2.Platform(), appLock, proclock.Options{})
	if err != nil {
		t.Fatalf("SQLite process after both died: %v; want the lock", err)
	}
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	l, err = proclock.Acquire(ctx, fileMech(w.Spawn()), appLock, proclock.Options{})
	if err != nil {
		t.Fatalf("file process once the SQLite process released: %v; want the lock", err)
	}
	l.Release()
}

// The same with a torn stamp: a file process died while writing its stamp
// into the file an identity-less SQLite holder held, and the holder died
// too. Past the 30 s window the torn stamp is cleared like a dead one, and
// the next SQLite process takes the lock. (Found by spin.)
func TestTornStampBesideUnknownMark(t *testing.T) {
	ctx := context.Background()
	w := fake.New()
	s1, s2 := w.Spawn(), w.Spawn()
	s1.FailIdentity(errors.New("no /proc"))
	if _, err := proclock.Acquire(ctx, s1.Platform(), appLock, proclock.Options{}); err != nil {
		t.Fatal(err)
	}
	fh, err := w.FS().OpenFile(appLock, os.O_WRONLY|os.O_TRUNC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fh.Write([]byte(`{"format":"proclock/1","host":"h`))
	fh.Close()
	s1.Kill()
	w.Advance(time.Hour)
	l, err := proclock.Acquire(ctx, s2.Platform(), appLock, proclock.Options{})
	if err != nil {
		t.Fatalf("SQLite process after both died: %v; want the lock", err)
	}
	l.Release()
}
