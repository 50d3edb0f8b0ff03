package cli

import (
	"bytes"
	"encoding/json"
	"flag"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata/status")

// TestStatusJSONGolden pins status --json's format for every state
// Inspect reports, every stale reason, and a holder known fully, partly
// or not at all: testdata/status/NAME.json holds the object each gives.
// A change to them is a change of the documented format (docs/command.md),
// and unless it only adds fields it needs a new formatVersion.
func TestStatusJSONGolden(t *testing.T) {
	acquired := time.Date(2026, 3, 1, 8, 0, 1, 500_000_000, time.FixedZone("CET", 3600))
	started := acquired.Add(-1500 * time.Millisecond)
	full := &platform.Identity{Host: "buildhost", BootID: "6f1c2a44-0a2b-4c39-9a57-3c1f0e0d7b21", PID: 4242,
		StartTime: 123456, PIDNamespace: 4026531836, LauncherPID: 4200}
	bare := &platform.Identity{Host: "otherhost", PID: 77}
	// A holder in a container of this host: its own pid and time
	// namespaces, its boot clock a day and more ahead.
	contained := &platform.Identity{Host: "buildhost", BootID: full.BootID, PID: 1, StartTime: 123999,
		PIDNamespace: 4026532180, TimeNamespace: 4026532177, BootOffset: 100000e9}
	// The process start is known for the full identity only, as for a
	// holder of this host and boot.
	startedAt := func(id platform.Identity) (time.Time, bool) { return started, id.StartTime == full.StartTime }
	const path = "backup.lock"
	states := map[string]proclock.Status{
		"absent": {Path: path, State: proclock.StateAbsent, Mechanism: proclock.MechanismSQLite},
		"free":   {Path: path, State: proclock.StateFree, Mechanism: proclock.MechanismSQLite},
		"held": {Path: path, State: proclock.StateHeld, Holder: full, AcquiredAt: acquired,
			HeldFor: 192*time.Second + 250*time.Millisecond, Mechanism: proclock.MechanismSQLite},
		"held-other-host": {Path: path, State: proclock.StateHeld, Holder: bare, AcquiredAt: acquired,
			HeldFor: 3 * time.Second, Mechanism: proclock.MechanismFile},
		"held-unknown-holder": {Path: path, State: proclock.StateHeld, Mechanism: proclock.MechanismSQLite},
		"held-other-namespaces": {Path: path, State: proclock.StateHeld, Holder: contained, AcquiredAt: acquired,
			HeldFor: 3 * time.Second, OtherPIDNamespace: true, OtherTimeNamespace: true, Mechanism: proclock.MechanismFile},
		"held-flock": {Path: path, State: proclock.StateHeld, Reason: "a flock(2) lock",
			Mechanism: proclock.MechanismSQLite},
		"inaccessible": {Path: path, State: proclock.StateInaccessible, Reason: "permission denied",
			Mechanism: proclock.MechanismFile},
		"foreign": {Path: path, State: proclock.StateForeign, Reason: "not a lock file: proclock never changes it; lock another path",
			Mechanism: proclock.MechanismSQLite},
	}
	for name, reason := range map[string]string{
		"stale-pid-gone":   "pid gone",
		"stale-pid-reused": "pid reused",
		"stale-other-boot": "other boot",
		"stale-unstamped":  "unstamped past 30 s",
		"stale-unreadable": "unreadable past 30 s",
	} {
		st := proclock.Status{Path: path, State: proclock.StateStale, Reason: reason, Mechanism: proclock.MechanismFile}
		if name != "stale-unstamped" && name != "stale-unreadable" {
			st.Holder, st.AcquiredAt, st.HeldFor = full, acquired, time.Hour
		}
		states[name] = st
	}
	dir := filepath.Join("testdata", "status")
	if *update {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	for name, st := range states {
		var got bytes.Buffer
		enc := json.NewEncoder(&got)
		enc.SetIndent("", "  ")
		if err := enc.Encode(statusRecord(st, startedAt)); err != nil {
			t.Fatal(err)
		}
		file := filepath.Join(dir, name+".json")
		if *update {
			if err := os.WriteFile(file, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(file)
		if err != nil {
			t.Fatalf("%v (go test -run TestStatusJSONGolden -update writes it)", err)
		}
		if !bytes.Equal(got.Bytes(), want) {
			t.Errorf("%s: status --json gives\n%s\nwant (%s)\n%s", name, got.Bytes(), file, want)
		}
	}
	// Every golden file is one of the states above: none is left over
	// from a state that went away.
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	for _, f := range files {
		if _, ok := states[filepath.Base(f[:len(f)-len(".json")])]; !ok {
			t.Errorf("%s pins no state this test makes", f)
		}
	}
	// Every state the library has is pinned.
	for _, s := range []proclock.State{proclock.StateAbsent, proclock.StateFree, proclock.StateHeld,
		proclock.StateStale, proclock.StateInaccessible, proclock.StateForeign} {
		if !slices.ContainsFunc(slices.Collect(maps.Values(states)), func(st proclock.Status) bool { return st.State == s }) {
			t.Errorf("no golden file for state %q", s)
		}
	}
}
