package sqlapi_test

import (
	"runtime"
	"testing"

	"github.com/proclock/proclock/internal/sqlapi"
	"github.com/proclock/proclock/platform"
)

// TestNativePowers: the native SQLite names files for SQLite wherever it
// exists, and opens connections where it does not lock bytes itself
// (docs/design.md, "What compiles where"). platform implements these
// interfaces without naming them; this is where a drifted method fails.
func TestNativePowers(t *testing.T) {
	sq := platform.Native().SQLite
	if sq == nil {
		t.Skipf("no native SQLite on %s", runtime.GOOS)
	}
	if _, ok := sq.(sqlapi.SQLiteNamer); !ok {
		t.Errorf("the native SQLite is no SQLiteNamer on %s", runtime.GOOS)
	}
	if _, ok := sq.(sqlapi.SQLConnector); ok == sq.LocksBytes() {
		t.Errorf("the native SQLite: SQLConnector %v with LocksBytes %v on %s; want connections exactly where it locks no bytes", ok, sq.LocksBytes(), runtime.GOOS)
	}
}
