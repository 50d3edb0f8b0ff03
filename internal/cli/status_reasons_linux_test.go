package cli

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// TestStatusJSONFlockReason: a lock held with flock(2) by a program that
// is not proclock (flock(1)) has an unknown holder, and status --json
// says what is known of it, as held-flock.json pins.
func TestStatusJSONFlockReason(t *testing.T) {
	path := filepath.Join(t.TempDir(), "backup.lock")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	st, err := proclock.Inspect(context.Background(), platform.Native(), path)
	if err != nil {
		t.Fatal(err)
	}
	if st.State != proclock.StateHeld || st.Holder != nil {
		t.Fatalf("a flock(2) lock: state %q, holder %v; want held by an unknown holder", st.State, st.Holder)
	}
	checkReason(t, "held-flock", st)
}
