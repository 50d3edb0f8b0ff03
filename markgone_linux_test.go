package proclock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// TestMarkRemovedLetsOthersIn: a SQLite holder's mark removed lets others
// in, one after another, as docs/protocol.md ("A held lock's files
// removed") says: a file process that cannot see the kernel's locks (a
// wasm guest's kind: its FS has no fsx.Flocker nor RangeLocker)
// converts the free database and holds beside the holder; once it
// releases (removing P), a SQLite process creates a new P and holds too:
// the first holder's kernel lock is on a file nobody else reaches. The
// first holder is told of its loss.
func TestMarkRemovedLetsOthersIn(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "x.lock")
	first, err := proclock.Acquire(ctx, platform.Native(), path, proclock.Options{})
	mustDo(t, err)
	defer first.Release()
	if first.Mechanism() != proclock.MechanismSQLite {
		t.Skip("SQLite is not available to this platform: the case is a SQLite holder's")
	}
	mustDo(t, os.Remove(path+".holder"))
	if err := first.Err(); !errors.Is(err, proclock.ErrRemoved) {
		t.Fatalf("the first holder's Err = %v; want ErrRemoved", err)
	}
	guest := *platform.Native().WithoutSQLite()
	guest.FS = struct{ lockfs.FS }{guest.FS} // only the FS's own methods
	second, err := proclock.Acquire(ctx, &guest, path, proclock.Options{})
	if err != nil {
		t.Fatalf("a file process beside a holder without its mark: %v; docs/protocol.md says it converts the free database and holds", err)
	}
	mustDo(t, second.Release())
	// Another process: this one's turns keep its own attempts out.
	out := strings.TrimSpace(string(locktest.Output(t, timensTaker.Command(string(proclock.MechanismSQLite), path))))
	if out != "acquired" {
		t.Fatalf("a SQLite process after the file process released: %s; docs/protocol.md says it holds", out)
	}
}
