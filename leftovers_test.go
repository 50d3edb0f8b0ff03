package proclock_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
)

// TestCrashLeftoversRemovedOnceWriterDead (issue 19, "Why" 10): crashed
// reclaimers and writers leave guards set aside under a private name
// ("<guard>.stale-<pid>-<random>", and "<path>.stale-<pid>-<random>") and
// temporary files ("<name>.new-<pid>-<random>"). The next process that
// meets a crash at the lock (here, a dead holder's stamp) removes those
// whose writer is gone for certain, on either mechanism, and never a live
// process's or a user's file. On the old code they stayed for good.
func TestCrashLeftoversRemovedOnceWriterDead(t *testing.T) {
	ctx := context.Background()
	for _, file := range []bool{false, true} {
		t.Run(fmt.Sprintf("file mechanism %v", file), func(t *testing.T) {
			w := fake.New()
			dead, live := w.Spawn(), w.Spawn()
			record := func(p *fake.Process) []byte {
				return lockrec.Record{Format: lockrec.Format, Identity: p.Identity(), AcquiredAt: w.Now(), Nonce: "n"}.Marshal()
			}
			guard := lockrec.Sidecar(appLock, lockrec.GuardSuffix)
			name := func(owner, infix string, p *fake.Process, random string) string {
				return lockrec.Sidecar(owner, fmt.Sprintf("%s-%d-%s", infix, p.PID(), random))
			}
			gone := map[string][]byte{
				name(guard, lockrec.GuardSuffix, dead, "AAAAAAAAAAAAAAAAAAAAAAAAAA"):             record(dead), // a guard of a dead holder set aside
				name(appLock, lockrec.GuardSuffix, dead, "BBBBBBBBBBBBBBBBBBBBBBBBBB"):           record(dead),
				name(lockrec.MarkPath(appLock), ".new", dead, "CCCCCCCCCCCCCCCCCCCCCCCCCC"):      record(dead), // a mark never linked
				name(appLock, ".new", dead, "DDDDDDDDDDDDDDDDDDDDDDDDDD"):                        nil,          // created, never written
				name(lockrec.Sidecar(guard, lockrec.GuardSuffix), ".new", dead, "EEEEEEEEEEEEE"): record(dead),
			}
			kept := map[string][]byte{
				name(appLock, ".new", live, "FFFFFFFFFFFFFFFFFFFFFFFFFF"):            record(live), // a live writer's
				name(guard, lockrec.GuardSuffix, live, "GGGGGGGGGGGGGGGGGGGGGGGGGG"): record(live), // a live guard set aside
				name(appLock, ".new", dead, "HHHHHHHHHHHHHHHHHHHHHHHHHH"):            []byte("a user's notes\n"),
				appLock + ".stale-notes": record(dead), // not our name
				appLock + ".new-12-":     nil,
			}
			for _, files := range []map[string][]byte{gone, kept} {
				for n, data := range files {
					if err := w.WriteFile(n, data, 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			w.Advance(31 * time.Second) // the empty one is old
			if _, err := proclock.Acquire(ctx, fileMech(dead), appLock, proclock.Options{}); err != nil {
				t.Fatal(err)
			}
			dead.Kill() // a crash: its stamp stays
			p := w.Spawn()
			pp := p.Platform()
			if file {
				pp = fileMech(p)
			}
			l, err := proclock.Acquire(ctx, pp, appLock, proclock.Options{})
			if err != nil {
				t.Fatalf("Acquire over a dead holder's stamp: %v", err)
			}
			defer l.Release()
			for n := range gone {
				if _, err := w.FS().Lstat(n); err == nil {
					t.Errorf("%s: a dead writer's leftover, still there", n)
				}
			}
			for n, data := range kept {
				if got, err := w.ReadFile(n); err != nil || string(got) != string(data) {
					t.Errorf("%s: %q, %v; want it kept as it was", n, got, err)
				}
			}
		})
	}
}
