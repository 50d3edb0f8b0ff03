package conformance

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// Stamps whose holder is dead for certain are reclaimed at once: the pid
// is gone, the pid was reused by a process with another start time, or the
// stamp is from another boot.
func testStaleStamps(t *testing.T, c *env) {
	live := c.Spawn(t)
	gone := c.Spawn(t)
	goneID := gone.Identity()
	gone.Kill()
	reused := live.Identity()
	reused.StartTime++
	otherBoot := live.Identity()
	otherBoot.BootID = "another-boot"
	for _, tc := range []struct {
		name   string
		holder platform.Identity
		reason string
	}{
		{"pid gone", goneID, "pid gone"},
		{"pid reused", reused, "pid reused"},
		{"other boot", otherBoot, "other boot"},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			c.plantStamp(t, c.lock(), tc.holder)
			st, err := live.Inspect(testContext(t), c.lock())
			if err != nil || st.State != proclock.StateStale || st.Reason != tc.reason {
				t.Fatalf("Inspect = %+v, %v; want stale, %q", st, err, tc.reason)
			}
			if held, err := live.IsHeld(testContext(t), c.lock()); err != nil || held {
				t.Fatalf("IsHeld = %v, %v; want false: the holder is dead", held, err)
			}
			mustAcquire(t, live, c.lock(), proclock.Options{RemoveOnRelease: true})
			mustRelease(t, live, c.lock())
			if c.exists(t, c.lock()) {
				t.Fatalf("lock file left after release")
			}
		})
	}
}

// Stamps that cannot be judged from here (another host, another pid
// namespace) are never reclaimed, however old.
func testUnjudgeableStamps(t *testing.T, c *env) {
	a := c.Spawn(t)
	otherHost := a.Identity()
	otherHost.Host = "elsewhere.example"
	otherNS := a.Identity()
	otherNS.PIDNamespace++
	cases := []struct {
		name   string
		holder platform.Identity
	}{{"other host", otherHost}}
	if a.Identity().PIDNamespace != 0 {
		cases = append(cases, struct {
			name   string
			holder platform.Identity
		}{"other namespace", otherNS})
	}
	for _, tc := range cases {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			c.plantStamp(t, c.lock(), tc.holder)
			if !c.Advance(24 * time.Hour) {
				c.age(t, c.lock(), 24*time.Hour)
			}
			wantHolder(t, mustBeHeld(t, a, c.lock()), tc.holder)
			if err := c.FS().Remove(c.lock()); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A lock file without a stamp (empty: a crash between create and stamp, or
// an old SQLite lock's file; torn: a crash while stamping) and without a
// SQLite holder's mark is held with its holder unknown for 30 s after its
// last write, and stale after.
func testUnstampedWindow(t *testing.T, c *env) {
	a := c.Spawn(t)
	for _, tc := range []struct {
		name    string
		content []byte
		reason  string
	}{
		{"empty", nil, "unstamped past 30 s"},
		{"torn", []byte(`{"format":"proclock/1","host":"h","pid":4`), "unreadable past 30 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.FS().Remove(c.lock())
			c.plant(t, c.lock(), tc.content)
			if c.Advance(unstampedWindow) {
				// Exactly at the window's end: still held.
				if h := mustBeHeld(t, a, c.lock()); h != nil {
					t.Fatalf("holder %+v; want unknown", *h)
				}
				c.Advance(time.Nanosecond)
			} else {
				c.age(t, c.lock(), unstampedWindow-5*time.Second)
				if h := mustBeHeld(t, a, c.lock()); h != nil {
					t.Fatalf("holder %+v; want unknown", *h)
				}
				c.age(t, c.lock(), unstampedWindow+time.Second)
			}
			st, err := a.Inspect(testContext(t), c.lock())
			if err != nil || st.State != proclock.StateStale || st.Reason != tc.reason {
				t.Fatalf("Inspect past the window = %+v, %v; want stale, %q", st, err, tc.reason)
			}
			mustAcquire(t, a, c.lock(), proclock.Options{})
			mustRelease(t, a, c.lock())
		})
	}
}

// A bare pid (legacy pid file) and another tool's JSON stamp are judged on
// what they say for certain: the pid, on this host.
func testLegacyAndForeignStamps(t *testing.T, c *env) {
	for _, tc := range []struct {
		name  string
		write func(pid int) string
	}{
		{"legacy pid", func(pid int) string { return fmt.Sprintf(" %d\n", pid) }},
		{"foreign json", func(pid int) string {
			return fmt.Sprintf(`{"pid":%d,"launcherPid":1,"lockId":"x","startTime":"12:00"}`, pid)
		}},
	} {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			holder, other := c.Spawn(t), c.Spawn(t)
			c.plant(t, c.lock(), []byte(tc.write(holder.Identity().PID)))
			got := mustBeHeld(t, other, c.lock())
			if got == nil || got.PID != holder.Identity().PID {
				t.Fatalf("holder %+v; want pid %d", got, holder.Identity().PID)
			}
			holder.Kill()
			mustAcquire(t, other, c.lock(), proclock.Options{RemoveOnRelease: true})
			mustRelease(t, other, c.lock())
		})
	}
}

// sqlitePage is the first size bytes of a SQLite database whose pages are
// size bytes: one page is a database with no tables.
func sqlitePage(size int) []byte {
	b := make([]byte, size)
	copy(b, "SQLite format 3\x00")
	b[16], b[17] = byte(size>>8), byte(size)
	if size == 65536 {
		b[16], b[17] = 0, 1
	}
	return b
}

// unstampedWindow is how long an empty or torn lock file counts as held
// after its last change (docs/protocol.md, "Judging what is there").
const unstampedWindow = 30 * time.Second
