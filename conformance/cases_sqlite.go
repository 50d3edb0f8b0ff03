package conformance

import (
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/sqlitelock"
)

// The SQLite lock file stays empty with no journal beside it, and .holder
// names the holder while held and is gone after release.
func testHolderFile(t *testing.T, c *env) {
	a := c.Spawn(t)
	mustAcquire(t, a, c.lock(), proclock.Options{})
	info, err := c.FS().Stat(c.lock())
	if err != nil {
		t.Fatal(err)
	}
	if info.Size() != 0 {
		t.Errorf("lock file is %d bytes while held; want 0", info.Size())
	}
	for _, suffix := range []string{"-journal", "-wal", "-shm"} {
		if c.exists(t, c.lock()+suffix) {
			t.Errorf("%s exists while held", c.lock()+suffix)
		}
	}
	rec := sqlitelock.ReadHolder(c.FS(), c.lock())
	if rec == nil {
		t.Fatal(".holder is missing or unreadable while held")
	}
	wantHolder(t, &rec.Identity, a.Identity())
	mustRelease(t, a, c.lock())
	if c.exists(t, c.lock()+sqlitelock.HolderSuffix) {
		t.Error(".holder left after release")
	}
}
