package proclock_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/peer"
)

// TestHardLinkStaysOneLock (issue 29, item 5): a lock file with two names
// (x.lock and a hard link y.lock) stays one lock through every release:
// processes taking it in turns through the two names, each waiting,
// never find another inside (an occupancy marker created with O_EXCL),
// for each pairing of mechanisms and with all four users at once (with
// RemoveOnRelease too, which keeps a file with other names). A
// file-mechanism release that unlinked its name made the names two locks.
func TestHardLinkStaysOneLock(t *testing.T) {
	rounds := 300
	if testing.Short() {
		rounds = 100
	}
	sqlite, file := proclock.MechanismSQLite, proclock.MechanismFile
	type user struct {
		mech   proclock.Mechanism
		link   bool // through y.lock
		remove bool // RemoveOnRelease
	}
	for _, tc := range []struct {
		name  string
		users []user
	}{
		{"sqlite_sqlite", []user{{sqlite, false, false}, {sqlite, true, false}}},
		{"sqlite_file", []user{{sqlite, false, false}, {file, true, false}}},
		{"file_sqlite", []user{{file, false, false}, {sqlite, true, false}}},
		{"file_file", []user{{file, false, false}, {file, true, false}}},
		{"mixed", []user{{sqlite, false, false}, {file, false, false}, {sqlite, true, false}, {file, true, false}}},
		{"mixed_remove", []user{{sqlite, false, true}, {file, false, false}, {sqlite, true, true}, {file, true, false}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path, link := filepath.Join(dir, "x.lock"), filepath.Join(dir, "y.lock")
			takeHere(t, sqlite, path) // a free lock's database, to link
			if err := os.Link(path, link); err != nil {
				t.Fatal(err)
			}
			results := make([]peer.StressResult, len(tc.users))
			errs := make([]error, len(tc.users))
			var wg sync.WaitGroup
			for i, u := range tc.users {
				p := peer.Spawn(t, u.mech)
				plan := peer.StressPlan{Lock: path, Marker: filepath.Join(dir, "occupied"), Counter: filepath.Join(dir, "counter"), N: rounds, Opts: proclock.Options{RemoveOnRelease: u.remove}}
				if u.link {
					plan.Lock = link
				}
				wg.Go(func() { results[i], errs[i] = p.Stress(context.Background(), plan) })
			}
			wg.Wait()
			done, overlaps := 0, 0
			for i, r := range results {
				if errs[i] != nil {
					t.Errorf("user %d (%s): %v", i, tc.users[i].mech, errs[i])
				}
				done += r.Done
				overlaps += r.Overlaps
			}
			t.Logf("%d sections, %d overlaps", done, overlaps)
			if overlaps != 0 {
				t.Errorf("%d of %d critical sections found another holder inside: the two names are two locks", overlaps, done)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "counter")); string(got) != strconv.Itoa(done) {
				t.Errorf("counter %q after %d sections", got, done)
			}
			a, aerr := os.Stat(path)
			b, berr := os.Stat(link)
			if aerr != nil || berr != nil || !os.SameFile(a, b) {
				t.Errorf("the two names after the run: %v, %v; want one file", aerr, berr)
			}
		})
	}
}
