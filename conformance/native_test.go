package conformance_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
	"github.com/proclock/proclock/internal/locktest"
	"github.com/proclock/proclock/internal/peer"
	_ "github.com/proclock/proclock/internal/peer/sqlpeer" // the SQL path's peers (MechanismSQLiteSQL)
)

// TestMain serves the native harness's peers as docs/testing.md tells
// other projects to.
func TestMain(m *testing.M) {
	conformance.MaybeServePeer()
	os.Exit(m.Run())
}

func TestNative(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
		t.Run(string(mech), func(t *testing.T) {
			if mech == proclock.MechanismFile {
				locktest.SkipOnWine(t, locktest.WineBirthTime)
			}
			conformance.Run(t, conformance.Native(mech))
		})
	}
}

// Eight processes take one lock 500 times each, all of one mechanism or
// half of each: no two ever hold it at once (the occupancy marker) and no
// update is lost (the counter).
func TestNativeStress(t *testing.T) {
	if testing.Short() {
		t.Skip("stress runs 4000 acquisitions across 8 processes; skipped in -short")
	}
	procs, rounds := 8, 500
	if raceEnabled {
		procs, rounds = 4, 150
	}
	sqlite, file := proclock.MechanismSQLite, proclock.MechanismFile
	for _, tc := range []struct {
		mechs  []proclock.Mechanism // peer i uses mechs[i % len(mechs)]
		remove bool
	}{
		{[]proclock.Mechanism{sqlite}, false},
		{[]proclock.Mechanism{sqlite}, true},
		{[]proclock.Mechanism{file}, false},
		{[]proclock.Mechanism{sqlite, file}, false},
		{[]proclock.Mechanism{sqlite, file}, true},
		// SQLite's lock through SQL, as where the OS's SQLite has no
		// byte-range power, beside the file mechanism and beside the
		// byte-range locks.
		{[]proclock.Mechanism{peer.MechanismSQLiteSQL, file}, true},
		{[]proclock.Mechanism{peer.MechanismSQLiteSQL, sqlite}, true},
	} {
		var names []string
		for _, m := range tc.mechs {
			names = append(names, string(m))
		}
		name := strings.Join(names, "+")
		if tc.remove {
			name += "/RemoveOnRelease"
		}
		t.Run(name, func(t *testing.T) {
			if slices.Contains(tc.mechs, proclock.MechanismFile) {
				locktest.SkipOnWine(t, locktest.WineBirthTime)
			}
			dir := t.TempDir()
			plan := peer.StressPlan{
				Lock:    filepath.Join(dir, "stress.lock"),
				Marker:  filepath.Join(dir, "occupied"),
				Counter: filepath.Join(dir, "counter"),
				N:       rounds,
				Opts:    proclock.Options{RemoveOnRelease: tc.remove},
			}
			peers := make([]*peer.Native, procs)
			for i := range peers {
				peers[i] = peer.Spawn(t, tc.mechs[i%len(tc.mechs)])
			}
			results := make([]peer.StressResult, procs)
			errs := make([]error, procs)
			var wg sync.WaitGroup
			for i, p := range peers {
				wg.Go(func() { results[i], errs[i] = p.Stress(context.Background(), plan) })
			}
			wg.Wait()
			done, overlaps := 0, 0
			for i := range peers {
				if errs[i] != nil {
					t.Errorf("peer %d: %v", i, errs[i])
				}
				done += results[i].Done
				overlaps += results[i].Overlaps
			}
			counter, err := os.ReadFile(plan.Counter)
			if err != nil {
				t.Fatal(err)
			}
			if overlaps != 0 {
				t.Errorf("%d critical sections found another holder inside", overlaps)
			}
			if got := string(counter); got != strconv.Itoa(done) || done != procs*rounds {
				t.Errorf("counter %s after %d critical sections; want %d", got, done, procs*rounds)
			}
		})
	}
}
