package cli

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/platform"
)

// goldenReason is the reason testdata/status/NAME.json pins.
func goldenReason(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "status", name+".json"))
	if err != nil {
		t.Fatal(err)
	}
	var r jsonStatus
	if err := json.Unmarshal(b, &r); err != nil {
		t.Fatalf("%s.json: %v", name, err)
	}
	return r.Reason
}

// checkReason fails unless st, as status --json prints it, has the state
// and the reason that golden's file pins: the golden files are made from
// Status values written by hand, and this ties their reasons to what
// Inspect says.
func checkReason(t *testing.T, golden string, st proclock.Status) {
	t.Helper()
	want := goldenReason(t, golden)
	r := statusRecord(st, func(platform.Identity) (time.Time, bool) { return time.Time{}, false })
	if !strings.HasPrefix(golden, r.State) || r.Reason != want {
		t.Errorf("Inspect's %s lock prints state %q, reason %q in status --json; %s.json pins reason %q (docs/command.md)",
			golden, r.State, r.Reason, golden, want)
	}
}

// TestStatusJSONReasons: the reason status --json gives for a lock that is
// inaccessible or foreign, as the library's Inspect finds them, is the one
// docs/command.md documents and the golden files pin.
func TestStatusJSONReasons(t *testing.T) {
	ctx := context.Background()
	const path = "/backup.lock"

	w := fake.New()
	if err := w.WriteFile(path, []byte("#!/bin/sh\necho backup\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := proclock.Inspect(ctx, w.Spawn().Platform(), path)
	if err != nil {
		t.Fatal(err)
	}
	checkReason(t, "foreign", st)

	w = fake.New()
	holder := w.Spawn()
	lock, err := proclock.Acquire(ctx, holder.Platform(), path, proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer lock.Release()
	// Every fake process owns every file: a mode of 0 stages EACCES.
	if err := w.Chmod(path, 0); err != nil {
		t.Fatal(err)
	}
	st, err = proclock.Inspect(ctx, w.Spawn().Platform(), path)
	if err != nil {
		t.Fatal(err)
	}
	checkReason(t, "inaccessible", st)
}
