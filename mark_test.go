package proclock_test

import (
	"context"
	"strings"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
)

// TestSymlinkAtLongMark: a symlink at a lock's mark is no mark
// (proclock writes none), for a short base name and for one long enough
// that the mark's name is shortened (docs/protocol.md, "Names") alike.
// ReadMark looked at path+".holder" instead of the shortened name, so with
// a long name the symlink read as a mark being written, with no time: the
// lock stayed held, holder unknown, forever.
func TestSymlinkAtLongMark(t *testing.T) {
	for _, base := range []string{"app.lock", strings.Repeat("a", 250)} {
		for _, mech := range []string{"sqlite", "file"} {
			t.Run(mech+"/"+base[:5], func(t *testing.T) {
				w := fake.New()
				path := "/tmp/" + base
				if err := w.Symlink("/nowhere", lockrec.MarkPath(path)); err != nil {
					t.Fatal(err)
				}
				p := w.Spawn().Platform()
				if mech == "file" {
					p = p.WithoutSQLite()
					// The SQLite mechanism's lock, left: judged by its mark.
					if err := w.WriteFile(path, nil, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				w.Advance(lockrec.MarkWindow + 1)
				l, err := proclock.Acquire(context.Background(), p, path, proclock.Options{})
				if err != nil {
					t.Fatalf("Acquire beside a symlink at the mark %s: %v; want the lock", lockrec.MarkPath(path)[5:12], err)
				}
				l.Release()
			})
		}
	}
}
