package proclock_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
)

// TestReleaseKeepsConvertedStampNative (issue 29, item 2), with real
// processes: the empty database written over a file-mechanism holder's
// stamp in place, a second file process converts the file and holds it,
// and the first holder's Release fails and leaves it: processes of both
// mechanisms find it held.
func TestReleaseKeepsConvertedStampNative(t *testing.T) {
	path := filepath.Join(t.TempDir(), "x.lock")
	h := linksHoldElsewhere(t, proclock.MechanismFile, path, false)
	if err := os.WriteFile(path, lockrec.EmptyDatabase(), 0o644); err != nil { // in place: O_TRUNC
		t.Fatal(err)
	}
	h2 := linksHoldElsewhere(t, proclock.MechanismFile, path, false)
	h.c.Stdin.Write([]byte("release\n"))
	if line, err := h.c.Line(); err != nil || !strings.HasPrefix(line, "error") {
		t.Errorf("the first holder's Release: %q, %v; want an error", line, err)
	}
	for _, mech := range mechanisms {
		if r := linksTryElsewhere(t, mech, path); r.Acquired || !r.Held {
			t.Errorf("a %s process beside the second holder, after the first one's Release: %+v; want held", mech, r)
		}
	}
	h2.release()
	for _, mech := range mechanisms {
		takeHere(t, mech, path)
	}
}
