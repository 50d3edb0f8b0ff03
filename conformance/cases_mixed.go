package conformance

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// MixedWorld is a World that can also start peers locking with another
// mechanism than its harness's, on the same files, as a native process and
// a wasm-hosted one share a directory. The cases of both mechanisms on one
// path run only in worlds that can.
type MixedWorld interface {
	World
	// SpawnMechanism starts a process of this host locking with mech.
	SpawnMechanism(t *testing.T, mech proclock.Mechanism) Peer
}

// other is the mechanism that is not mech.
func other(mech proclock.Mechanism) proclock.Mechanism {
	if mech == proclock.MechanismSQLite {
		return proclock.MechanismFile
	}
	return proclock.MechanismSQLite
}

// mixedPair returns a peer of the case's mechanism and one of the other,
// or skips the case where the world cannot make the second.
func (c *env) mixedPair(t *testing.T) (ours, theirs Peer) {
	t.Helper()
	mw, ok := c.World.(MixedWorld)
	if !ok {
		t.Skip("this harness cannot start peers of another mechanism")
	}
	return c.Spawn(t), mw.SpawnMechanism(t, other(c.mech))
}

// foreignFiles are files a user, a tool or chance may leave at a lock's
// path that are not lock files: each must be kept byte for byte, whatever
// its age, by every mechanism, and named as not a lock file.
var foreignFiles = []struct {
	name    string
	content string
}{
	{"flock(1) self-locking script", "#!/bin/sh\n[ \"${FLOCKER}\" != \"$0\" ] && exec env FLOCKER=\"$0\" flock -en \"$0\" \"$0\" \"$@\" || :\necho working\n"},
	{"text", "remember to water the plants\n"},
	{"brace then garbage", "{ this is not json, but it starts like it"},
	{"json without pid", `{"name":"config","debug":true}`},
	{"json with a string pid", `{"pid":"4242"}`},
	{"json with pid zero", `{"pid":0,"host":"h"}`},
	{"json with a negative pid", `{"pid":-7}`},
	{"json array", `[1,2,3]`},
	{"json null", `null`},
	{"binary", "\x00\x01\x02\xfe\xff\x00"},
	{"png image", "\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR\x00\x00\x00\x01\x00\x00\x00\x01\x08\x06\x00\x00\x00\x1f\x15\xc4\x89"},
	{"elf binary", "\x7fELF\x02\x01\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x03\x00>\x00"},
	{"sqlite database with tables", string(sqlitePage(512)) + string(make([]byte, 512))},
	{"file over 64 KiB", strings.Repeat("a", 64<<10+1)},
	{"live stamp padded over 64 KiB", `{"pid":1}` + strings.Repeat(" ", 64<<10)},
	{"byte order mark before a stamp", "\ufeff" + `{"pid":1}`},
	{"trailing garbage after a stamp", `{"pid":1}garbage`},
	{"two records", `{"pid":1}{"pid":2}`},
	{"whitespace only", " \n\t\n"},
	{"our marker with a broken time", `{"format":"proclock/1","pid":1,"acquiredAt":12}`},
	{"another tool's cut record", `{"pid":12,"lockId":"ab`},
}

// A file at the path that is not a lock file is never removed or changed,
// however old: Acquire (waiting or not) and IsHeld fail with an error
// matching ErrNotLockFile, and Inspect says it is foreign.
func testForeignFilesKept(t *testing.T, c *env) {
	a := c.Spawn(t)
	for _, tc := range foreignFiles {
		t.Run(strings.ReplaceAll(tc.name, " ", "_"), func(t *testing.T) {
			c.FS().Remove(c.lock())
			c.plant(t, c.lock(), []byte(tc.content))
			if !c.Advance(24 * time.Hour) {
				c.age(t, c.lock(), 24*time.Hour)
			}
			before := c.snapshot(t)
			for _, opts := range []proclock.Options{{}, {Wait: true}, {RemoveOnRelease: true}} {
				err := a.Acquire(testContext(t), c.lock(), opts)
				if err == nil {
					a.Release(c.lock())
				}
				if !errors.Is(err, proclock.ErrNotLockFile) {
					t.Fatalf("Acquire(%+v) = %v; want an error matching ErrNotLockFile", opts, err)
				}
			}
			if _, err := a.IsHeld(testContext(t), c.lock()); !errors.Is(err, proclock.ErrNotLockFile) {
				t.Errorf("IsHeld = %v; want an error matching ErrNotLockFile", err)
			}
			if st, err := a.Inspect(testContext(t), c.lock()); err != nil || st.State != proclock.StateForeign {
				t.Errorf("Inspect = %+v, %v; want state foreign", st, err)
			}
			c.unchanged(t, before, "trying to lock "+tc.name)
		})
	}
}

// A holder of either mechanism keeps a process of the other out, and each
// names the other: in the held error, in IsHeld and in Inspect. When the
// holder is killed, the other takes the lock.
func testMixedHolderNamed(t *testing.T, c *env) {
	for _, dir := range []string{"ours holds", "theirs holds"} {
		t.Run(strings.ReplaceAll(dir, " ", "_"), func(t *testing.T) {
			c.FS().Remove(c.lock()) // a free SQLite lock's file, from the last round
			ours, theirs := c.mixedPair(t)
			holder, waiter, mech := theirs, ours, other(c.mech)
			if dir == "ours holds" {
				holder, waiter, mech = ours, theirs, c.mech
			}
			mustAcquire(t, holder, c.lock(), proclock.Options{})
			wantHolder(t, mustBeHeld(t, waiter, c.lock()), holder.Identity())
			if held, err := waiter.IsHeld(testContext(t), c.lock()); err != nil || !held {
				t.Fatalf("IsHeld = %v, %v; want held", held, err)
			}
			st, err := waiter.Inspect(testContext(t), c.lock())
			if err != nil || st.State != proclock.StateHeld || st.Holder == nil || st.Holder.PID != holder.Identity().PID || st.Mechanism != mech {
				t.Fatalf("Inspect = %+v, %v; want held by pid %d with %s", st, err, holder.Identity().PID, mech)
			}
			holder.Kill()
			mustAcquire(t, waiter, c.lock(), proclock.Options{Wait: true})
			mustRelease(t, waiter, c.lock())
			// Whatever it leaves (no file, a SQLite lock's database
			// without a mark), the next of either kind takes it at once.
			for _, next := range []Peer{c.Spawn(t), c.World.(MixedWorld).SpawnMechanism(t, other(c.mech))} {
				mustAcquire(t, next, c.lock(), proclock.Options{})
				mustRelease(t, next, c.lock())
			}
		})
	}
}

// A holder of either mechanism whose lock file is older than 30 s, as a
// SQLite lock's file or a long-held stamp is, is still held, and named, for
// a process of the other mechanism; after its release the other takes it.
func testMixedAgedHolder(t *testing.T, c *env) {
	for _, remove := range []bool{false, true} {
		ours, theirs := c.mixedPair(t)
		for _, pair := range [][2]Peer{{ours, theirs}, {theirs, ours}} {
			holder, waiter := pair[0], pair[1]
			mustAcquire(t, holder, c.lock(), proclock.Options{RemoveOnRelease: remove})
			if !c.Advance(time.Hour) {
				c.age(t, c.lock(), time.Hour)
			}
			wantHolder(t, mustBeHeld(t, waiter, c.lock()), holder.Identity())
			mustRelease(t, holder, c.lock())
			mustAcquire(t, waiter, c.lock(), proclock.Options{})
			mustRelease(t, waiter, c.lock())
		}
	}
}

// Processes of both mechanisms contend for one lock, each waiting its
// turn: every acquisition succeeds, one at a time.
func testMixedTakeTurns(t *testing.T, c *env) {
	if _, native := c.World.(*nativeWorld); native {
		// File processes remove the lock file while others open it,
		// which wine serves with the removed file.
		locktest.SkipOnWine(t, locktest.WineDeletePending)
	}
	ours, theirs := c.mixedPair(t)
	peers := []Peer{ours, theirs, c.Spawn(t), c.World.(MixedWorld).SpawnMechanism(t, other(c.mech))}
	for round := range 3 {
		errs := race(peers, func(p Peer) error {
			if err := p.Acquire(testContext(t), c.lock(), proclock.Options{Wait: true, RemoveOnRelease: round == 1}); err != nil {
				return err
			}
			return p.Release(c.lock())
		})
		for i, err := range errs {
			if err != nil {
				t.Fatalf("round %d: peer %d (pid %d): %v%s", round, i, peers[i].Identity().PID, err, describe(errs))
			}
		}
	}
}
