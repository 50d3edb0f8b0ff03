package conformance

import (
	"bytes"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
)

// The SQLite lock file stays an empty database (no tables: no page is ever
// written) with no journal beside it, and .holder
// names the holder while held and is gone after release.
func testHolderFile(t *testing.T, c *env) {
	a := c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	if got := readAll(t, c.FS(), c.lock()); !bytes.Equal(got, lockrec.EmptyDatabase()) {
		t.Errorf("lock file holds %d bytes while held; want the %d of an empty database, which SQLite never writes to", len(got), len(lockrec.EmptyDatabase()))
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if c.exists(t, c.lock()+suffix) {
			t.Errorf("%s exists while held", c.lock()+suffix)
		}
	}
	rec := lockrec.ReadHolder(c.FS(), c.lock())
	if rec == nil {
		t.Fatal(".holder is missing or unreadable while held")
	}
	wantHolder(t, &rec.Identity, a.Identity())
	mustRelease(t, a, c.lock())
	if c.exists(t, c.lock()+lockrec.MarkSuffix) {
		t.Error(".holder left after release")
	}
}
