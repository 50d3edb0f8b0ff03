package proclock_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/fake/fakesql"
	"github.com/proclock/proclock/internal/explore"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/sqlitelock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// The schedule exploration of docs/protocol.md: lock users of both
// mechanisms on one path, in the fake world, under every schedule of their
// filesystem operations and SQLite's lock calls (package
// internal/explore), with and without one crash. In every schedule at most
// one user holds the lock at any moment, no user fails other than with a
// held error, and once every user has finished (or died), a fresh process
// of each mechanism takes the lock: at once, or, where the protocol makes a
// file process wait out an unstamped file's 30 s, once the clock has moved
// past them. A file beside the lock that is none of its files keeps its
// bytes, and no guard's private name is left behind.
//
// Each user makes one Acquire without Wait (a first attempt, with its short
// busy retries; a sleep moves the user's own clock by at least
// sqlitelock.BusyTimeout, so SQLite's busy handler tries twice before the
// retries) and, if it holds, one Release. A light scenario runs every
// schedule (sleep sets prune reorderings of independent steps); a heavy one,
// whose schedules are too many, every schedule of at most 1 preemption (2
// in the full run), as scenario.bound says. PROCLOCK_EXPLORE=full (as
// .ci/run sets) adds one crash per run, and three users.

const (
	exploreDir   = "/tmp"
	exploreLock  = exploreDir + "/explore.lock"
	exploreOther = exploreDir + "/explore.txt"       // a user's file beside the lock
	exploreLink  = exploreDir + "/explore-link.lock" // another name of the lock's file (stageLinkedDatabase)
)

var exploreOtherData = []byte("not a lock file: never changed\n")

// exploreFull reports whether the full exploration was asked for.
func exploreFull() bool { return os.Getenv("PROCLOCK_EXPLORE") == "full" }

// role is what one lock user does.
type role struct {
	name string
	file bool // the file mechanism; else SQLite
	// sql: SQLite's lock through SQL on a connection, not as byte-range
	// locks (the fake world's SQLite locks bytes; fakesql.SQLPlatform).
	sql bool
	// remove sets RemoveOnRelease.
	remove bool
	// holding: the user takes the lock before the run starts (outside
	// the schedule) and only releases it in the run.
	holding bool
	// rounds is how many times the user takes and lets go of the lock
	// (0: once), waiting for it (Options.Wait) when wait is set.
	rounds int
	wait   bool
	// fullDisk: the user's writes to the lock file fail with ENOSPC, as
	// on a full disk (its creates succeed); its Acquire may fail so.
	fullDisk bool
	// guest: the user's FS cannot see the kernel's locks on a file
	// (lockfs.RangeLocker, fsx.Flocker) nor keep a directory open
	// (fsx.DirOpener), as a wasm guest's: a file user then keeps out of
	// a SQLite holder by its mark alone (docs/protocol.md, "The kernel's
	// locks").
	guest bool
	// plain: a SQLite connection outside proclock (python's sqlite3, the
	// sqlite3 shell): it opens the lock file (creating it if missing, as
	// SQLite does), takes SQLite's exclusive lock, writes no mark and
	// looks for no stamp; it holds when what it then reads is a database
	// (empty, or the empty database), as SQLite's first read of the
	// file finds (plainRound).
	plain bool
	// link: the user reaches the lock through a hard link to its file
	// (exploreLink, staged by stageLinkedDatabase).
	link bool
}

// path is the name the user takes the lock by.
func (ro role) path() string {
	if ro.link {
		return exploreLink
	}
	return exploreLock
}

// blindFS is an FS without the powers a wasm guest's lacks (role.guest).
type blindFS struct{ lockfs.FS }

func (ro role) platform(u *explore.User) *platform.Platform {
	pp := u.Platform()
	switch {
	case ro.file:
		pp = pp.WithoutSQLite()
	case ro.sql:
		pp.SQLite = fakesql.SQLPlatform(u.Proc).SQLite
	}
	if ro.guest {
		pp.FS = blindFS{pp.FS}
	}
	return pp
}

func (ro role) mech() proclock.Mechanism {
	if ro.file {
		return proclock.MechanismFile
	}
	return proclock.MechanismSQLite
}

func (ro role) called(name string) role {
	ro.name = name
	return ro
}

// linked is ro through the hard link (role.link).
func (ro role) linked() role {
	ro.name += " via link"
	ro.link = true
	return ro
}

var (
	sqliteUser   = role{name: "sqlite"}
	sqliteRemove = role{name: "sqlite(remove)", remove: true}
	fileUser     = role{name: "file", file: true}
	sqlUser      = role{name: "sqlite(sql)", sql: true}
	sqlRemove    = role{name: "sqlite(sql,remove)", sql: true, remove: true}
	guestFile    = role{name: "file(guest)", file: true, guest: true}
	plainUser    = role{name: "plain sqlite", plain: true}
)

// stage is what is at the lock's path before the users start.
type stage int

const (
	stageNone            stage = iota
	stageDeadStamp             // a dead file holder's stamp
	stageDeadMark              // a dead SQLite holder's database and mark
	stageOldEmpty              // an empty lock file past its 30 s, no mark
	stageFreeDatabase          // a SQLite holder's database, let go of, kept
	stageLinkedDatabase        // the same, with a second name (exploreLink)
	stageLinkedDeadStamp       // a dead file holder's stamp, with a second name
)

func (s stage) String() string {
	return [...]string{"", "a dead holder's stamp", "a dead SQLite holder's mark", "an empty file past 30 s", "a free SQLite database", "a free SQLite database with two names", "a dead holder's stamp with two names"}[s]
}

// scenario is one configuration of the exploration.
type scenario struct {
	users []role
	stage stage
	// heavy: too many schedules to run them all here; runs are bounded
	// in their preemptions.
	heavy bool
	// spins: its users wait, and a run in which a waiter keeps trying
	// while the holder is not let go is cut at the step bound; such runs
	// are counted (Result.Cut), not failed; the bound is 1 preemption,
	// 2 when heavy too (PROCLOCK_EXPLORE_PREEMPT=2 runs all at 2: 23k–30k
	// runs, 2–2.5 min each).
	spins bool
	// preempt, when above 0, is the scenario's bound in the full run,
	// whatever the rest says: for a schedule known to need it.
	preempt int
	// steps, when above 0, is the scenario's step bound (maxSteps).
	steps int
	// windows: files are shared as on windows (fake.World.WindowsSharing:
	// a file SQLite has open cannot be removed), where SQLite users take
	// their lock through SQL.
	windows bool
}

func (sc scenario) String() string {
	var names []string
	for _, ro := range sc.users {
		names = append(names, ro.name)
	}
	s := strings.Join(names, " vs ")
	if sc.stage != stageNone {
		s += ", over " + sc.stage.String()
	}
	if sc.windows {
		s += ", windows sharing"
	}
	return s
}

// stageFiles puts the scenario's files in place, through processes that
// then die, and moves the clock past the 30 s of unstamped files.
func (sc scenario) stageFiles(w *fake.World) error {
	if sc.windows {
		w.WindowsSharing()
	}
	if err := w.WriteFile(exploreOther, exploreOtherData, 0o644); err != nil {
		return err
	}
	ctx := context.Background()
	switch sc.stage {
	case stageDeadStamp, stageDeadMark, stageLinkedDeadStamp:
		p := w.Spawn()
		pp := p.Platform()
		if sc.stage != stageDeadMark {
			pp = pp.WithoutSQLite()
		}
		if _, err := proclock.Acquire(ctx, pp, exploreLock, proclock.Options{}); err != nil {
			return err
		}
		p.Kill()
		if sc.stage == stageLinkedDeadStamp {
			return w.FS().Link(exploreLock, exploreLink)
		}
	case stageFreeDatabase, stageLinkedDatabase:
		l, err := proclock.Acquire(ctx, w.Spawn().Platform(), exploreLock, proclock.Options{})
		if err != nil {
			return err
		}
		if err := l.Release(); err != nil {
			return err
		}
		if sc.stage == stageLinkedDatabase {
			return w.FS().Link(exploreLock, exploreLink)
		}
	case stageOldEmpty:
		if err := w.WriteFile(exploreLock, nil, 0o644); err != nil {
			return err
		}
		w.Advance(31 * time.Second)
	}
	return nil
}

// linkless holds the worlds where the 30 s rule is the protocol's: a
// filesystem without hard links (noLinks), or another tool's empty file.
var linkless sync.Map

// exploreStats counts what the final checks of an exploration saw.
type exploreStats struct {
	runs, waited30s atomic.Int64
}

// config is the exploration of sc, with crashes or not, and at most bound
// preemptions a run (0: no bound).
func (sc scenario) config(crash bool, bound int, stats *exploreStats) explore.Config {
	return explore.Config{
		MaxSteps:    sc.maxSteps(),
		MinSleep:    sqlitelock.BusyTimeout,
		Preemptions: bound,
		Crash:       crash,
		Setup: func(r *explore.Run) func() error {
			w := r.World
			if err := sc.stageFiles(w); err != nil {
				r.Fail(fmt.Errorf("staging: %w", err))
			}
			for _, ro := range sc.users {
				if ro.plain {
					// Another tool's connection leaves an empty file
					// (it creates the path without writing it): the
					// 30 s rule is the protocol's for it.
					linkless.Store(w, true)
				}
				var held *proclock.Lock
				u := r.User(ro.name, func(u *explore.User) error {
					return lockUserBody(u, ro, held)
				})
				if ro.fullDisk {
					// Before the scheduler's hook: the failed write is
					// no step, as it changes nothing. The lock file's
					// writes, and its temporary files' (where a record
					// is written whole before it is linked in place).
					pid := u.Proc.PID()
					w.Before("write", "", func(ev fake.Event) error {
						if ev.PID == pid && (ev.Path == exploreLock || strings.HasPrefix(ev.Path, exploreLock+".new-")) {
							return syscall.ENOSPC
						}
						return nil
					})
				}
				if ro.holding {
					l, err := proclock.Acquire(context.Background(), ro.platform(u), ro.path(), proclock.Options{RemoveOnRelease: ro.remove})
					if err != nil {
						r.Fail(fmt.Errorf("staging %s: %w", ro.name, err))
					}
					held = l
				}
			}
			return func() error { return afterRun(w, stats) }
		},
	}
}

// lockUserBody is one user's run: Acquire (unless it holds already), the
// critical section, Release. A held error is the only failure allowed, and
// a lock must be of the user's own mechanism.
func lockUserBody(u *explore.User, ro role, held *proclock.Lock) error {
	for round := range max(ro.rounds, 1) {
		if err := lockUserRound(u, ro, held); err != nil {
			return fmt.Errorf("round %d: %w", round+1, err)
		}
		held = nil
	}
	return nil
}

// lockUserRound is one round of a user's run.
func lockUserRound(u *explore.User, ro role, held *proclock.Lock) error {
	if ro.plain {
		return plainRound(u, ro)
	}
	l := held
	if l == nil {
		var err error
		l, err = proclock.Acquire(context.Background(), ro.platform(u), ro.path(), proclock.Options{RemoveOnRelease: ro.remove, Wait: ro.wait})
		if errors.Is(err, proclock.ErrHeld) {
			u.Logf("held: %v", err)
			return nil
		}
		if ro.fullDisk && errors.Is(err, syscall.ENOSPC) {
			u.Logf("full disk: %v", err)
			return nil
		}
		if err != nil {
			return fmt.Errorf("acquire: %w", err)
		}
		if l.Mechanism() != ro.mech() {
			return fmt.Errorf("acquired with %s; want %s", l.Mechanism(), ro.mech())
		}
	}
	u.Critical()
	if err := l.Release(); err != nil {
		return fmt.Errorf("release: %w", err)
	}
	return nil
}

// plainRound is one round of a plain SQLite connection (role.plain): the
// kernel's side of a BEGIN EXCLUSIVE, and SQLite's first read of the file
// under it.
func plainRound(u *explore.User, ro role) error {
	fsys := ro.platform(u).FS
	f, err := fsys.OpenFile(ro.path(), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		return fmt.Errorf("open: %w", err)
	}
	defer f.Close() // lets go of the lock
	got, err := fsys.(lockfs.RangeLocker).TryLockRange(f, lockrec.SQLitePendingByte, lockrec.SQLiteLockBytes)
	switch {
	case err != nil:
		return fmt.Errorf("lock: %w", err)
	case !got:
		u.Logf("database is locked")
		return nil
	}
	kind, data, err := lockrec.ReadOpen(f)
	if err != nil {
		return fmt.Errorf("read: %w", err)
	}
	if kind != lockrec.Empty && kind != lockrec.SQLite {
		u.Logf("file is not a database (%v)", kind)
		return nil
	}
	u.Critical()
	// Nobody writes a database while another holds SQLite's lock on it.
	// (An empty file may be one a file user has just created, and stamps,
	// and then, finding the lock, gives back as the empty database: the
	// one write proclock makes without looking, docs/protocol.md, "The
	// kernel's locks".)
	if _, now, err := lockrec.ReadOpen(f); kind == lockrec.SQLite && (err != nil || !bytes.Equal(now, data)) {
		return fmt.Errorf("the database changed under the plain connection's lock: %q, %v; was %q", now, err, data)
	}
	return nil
}

// afterRun checks the world once every user has finished: a fresh process
// of each mechanism takes the lock at once and lets it go (one that finds
// it held fails the run, whatever crash the run had: the liveness of
// docs/protocol.md), the user's file beside the lock is unchanged, and no
// guard's private name is left.
func afterRun(w *fake.World, stats *exploreStats) error {
	stats.runs.Add(1)
	paths := []string{exploreLock}
	if _, err := w.ReadFile(exploreLink); err == nil {
		paths = append(paths, exploreLink) // what one name leaves must not wedge the other
	}
	_, linkless := linkless.Load(w)
	for _, name := range paths {
		for _, file := range []bool{false, true} {
			err := takeFresh(w, name, file)
			if linkless && errors.Is(err, proclock.ErrHeld) {
				// No hard links: the 30 s rule is the protocol's there.
				stats.waited30s.Add(1)
				w.Advance(31 * time.Second)
				err = takeFresh(w, name, file)
			}
			if errors.Is(err, proclock.ErrHeld) {
				stats.waited30s.Add(1)
				w.Advance(31 * time.Second)
				if lerr := takeFresh(w, name, file); lerr != nil {
					return fmt.Errorf("a fresh process (file mechanism: %v) cannot take the lock at %s: %w; after 31 s more: %w", file, name, err, lerr)
				}
				return fmt.Errorf("wedged: a fresh process (file mechanism: %v) finds the lock at %s held (%w) until the clock passes 30 s", file, name, err)
			}
			if err != nil {
				return fmt.Errorf("a fresh process (file mechanism: %v) cannot take the lock at %s: %w", file, name, err)
			}
		}
	}
	got, err := w.ReadFile(exploreOther)
	if err != nil || !bytes.Equal(got, exploreOtherData) {
		return fmt.Errorf("the file beside the lock: %q, %v", got, err)
	}
	d, err := w.FS().OpenFile(exploreDir, os.O_RDONLY, 0)
	if err != nil {
		return err
	}
	defer d.Close()
	names, err := d.(interface{ Readdirnames(int) ([]string, error) }).Readdirnames(-1)
	if err != nil {
		return err
	}
	for _, name := range names {
		if strings.Contains(name, ".stale-") {
			return fmt.Errorf("a guard's private name is left: %s", name)
		}
	}
	return nil
}

// takeFresh has a new process of the world take the lock at path at once
// and release it.
func takeFresh(w *fake.World, path string, file bool) error {
	pp := w.Spawn().Platform()
	if file {
		pp = pp.WithoutSQLite()
	}
	l, err := proclock.Acquire(context.Background(), pp, path, proclock.Options{})
	if err != nil {
		return err
	}
	return l.Release()
}

// bound is the preemption bound of sc's exploration (0: none). A heavy
// scenario is bounded: 1 preemption in the normal run, 2 in the full one;
// 1 with a crash, or with three users. A light one runs every schedule,
// or every schedule of at most 2 preemptions with a crash.
func (sc scenario) bound(crash bool) int {
	switch {
	case sc.preempt > 0 && exploreFull() && !crash:
		return sc.preempt
	case sc.spins && sc.heavy:
		return 2
	case sc.spins:
		return 1
	case sc.heavy && (crash || len(sc.users) > 2 || !exploreFull()):
		return 1
	case sc.heavy:
		return 2
	case crash:
		return 2
	}
	return 0
}

// runScenarios explores each scenario and logs its counts.
func runScenarios(t *testing.T, crash bool, scenarios []scenario) {
	t.Helper()
	for _, sc := range scenarios {
		bound := sc.bound(crash)
		if b := preemptEnv(); b > 0 {
			bound = b
		}
		t.Run(strings.NewReplacer(" ", "_", ",", "").Replace(sc.String()), func(t *testing.T) {
			t.Parallel() // one exploration a core
			if claimedElsewhere(t) {
				t.Skip("explored by another process of this run (PROCLOCK_EXPLORE_CLAIMS)")
			}
			var stats exploreStats
			var cpu0 time.Duration
			if exploreCPU != nil {
				cpu0 = exploreCPU(t)
			}
			res, err := explore.Explore(sc.config(crash, bound, &stats))
			if err != nil {
				t.Fatalf("%v\n%v", res, err)
			}
			if (!res.Complete || res.Cut > 0) && !sc.spins {
				t.Fatalf("%v: not every schedule explored", res)
			}
			how := "every schedule"
			if bound > 0 {
				how = fmt.Sprintf("every schedule of at most %d preemptions", bound)
			}
			t.Logf("%s, crashes %v: %v; %d complete runs, none of them needing the clock past 30 s for a fresh process", how, crash, res, stats.runs.Load())
			if exploreCPU != nil && runtime.GOMAXPROCS(0) == 1 {
				// One processor: the explorations run one at a time
				// (-parallel defaults to it), so the process's CPU
				// over this one is its own.
				t.Logf("CPU %.1f s (user+sys): %s", (exploreCPU(t) - cpu0).Seconds(), t.Name())
			}
		})
	}
}

// pairs are the two-user configurations. A configuration's schedules
// include both orders of its users.
var pairs = []scenario{
	{users: []role{sqliteUser, fileUser}, heavy: true},
	{users: []role{sqliteRemove, fileUser}, heavy: true},
	{users: []role{fileUser, fileUser.called("file 2")}},
	{users: []role{fileUser, fileUser.called("file 2")}, stage: stageDeadStamp, heavy: true},
	{users: []role{{name: "file holder", file: true, holding: true}, fileUser}},
	{users: []role{sqliteRemove, sqliteRemove.called("sqlite(remove) 2")}, heavy: true},
	{users: []role{sqliteUser, sqliteUser.called("sqlite 2")}, stage: stageDeadMark, heavy: true},
	{users: []role{sqliteUser, fileUser}, stage: stageDeadMark, heavy: true},
	{users: []role{sqliteUser, fileUser}, stage: stageDeadStamp, heavy: true},
	{users: []role{sqliteUser, fileUser}, stage: stageOldEmpty, heavy: true},
	{users: []role{{name: "sqlite(remove) holder", remove: true, holding: true}, fileUser}},
	{users: []role{{name: "sqlite holder", holding: true}, fileUser}},
	{users: []role{{name: "file holder", file: true, holding: true}, sqliteUser}},
	{users: []role{{name: "file holder", file: true, holding: true}, sqliteRemove}},
	// SQLite's lock through SQL (not linux), against the file mechanism
	// and against the byte-range lock.
	{users: []role{sqlUser, fileUser}, heavy: true},
	{users: []role{sqliteRemove, sqlRemove}, heavy: true},
	// windows: a file SQLite has open cannot be removed, so RemoveOnRelease
	// removes it just after letting go, and a file holder's release may
	// find it open (docs/design.md, Known limits).
	{users: []role{sqlRemove, fileUser}, heavy: true, windows: true},
	// A file user that cannot see the kernel's locks (a wasm guest) keeps
	// out of SQLite users by their marks alone.
	{users: []role{sqliteUser, guestFile}, heavy: true},
	{users: []role{sqliteRemove, guestFile}, heavy: true},
	// A SQLite connection outside proclock, which writes no mark and
	// looks for no stamp (python's sqlite3), against both mechanisms.
	{users: []role{plainUser, fileUser}},
	{users: []role{plainUser, fileUser}, stage: stageFreeDatabase},
	{users: []role{plainUser, sqliteUser}, stage: stageFreeDatabase},
	// One file, two names: users through a hard link to the lock file,
	// whose mark (a sidecar of the other name) they do not see.
	{users: []role{sqliteUser.linked(), fileUser}, stage: stageLinkedDatabase, heavy: true},
	{users: []role{sqliteUser, fileUser.linked()}, stage: stageLinkedDatabase, heavy: true},
	{users: []role{sqliteRemove.linked(), fileUser}, stage: stageLinkedDatabase, heavy: true},
	{users: []role{fileUser.linked(), fileUser.called("file 2")}, stage: stageLinkedDatabase},
	// A dead stamp in a file with two names: a SQLite user clears it and
	// a file user converts it, each under its own name's guard; SQLite's
	// lock keeps the two writes apart (TestCaseClearThroughLinkMeetsConvert:
	// 2 preemptions, as in the full run).
	{users: []role{sqliteUser.linked(), fileUser}, stage: stageLinkedDeadStamp, heavy: true},
}

// waiters are users that wait for the lock and take it twice, as
// daemons and the native stress do: the wait loop's attempts, and a
// process's second acquisition after its own release.
var waiters = []scenario{
	{users: []role{{name: "sqlite(remove) waits x2", remove: true, wait: true, rounds: 2}, {name: "file waits x2", file: true, wait: true, rounds: 2}}, spins: true, heavy: true},
	{users: []role{{name: "sqlite(remove) waits x2", remove: true, wait: true, rounds: 2}, {name: "sqlite(remove) 2 waits x2", remove: true, wait: true, rounds: 2}}, spins: true},
	{users: []role{{name: "file waits x2", file: true, wait: true, rounds: 2}, {name: "file 2 waits x2", file: true, wait: true, rounds: 2}}, spins: true},
}

// waitTriples are a holder and two waiters: the shape in which one
// waiter waits behind the other while the holder lets go. Every schedule
// of 1 preemption.
var waitTriples = []scenario{
	{users: []role{
		{name: "file holder", file: true, holding: true},
		{name: "file waits", file: true, wait: true},
		{name: "file 2 waits", file: true, wait: true},
	}, spins: true, steps: 250},
	{users: []role{
		{name: "sqlite(remove) holder", remove: true, holding: true},
		{name: "file waits", file: true, wait: true},
		{name: "sqlite(remove) waits", remove: true, wait: true},
	}, spins: true, steps: 400},
}

// Users that wait and take the lock twice, and a holder with two
// waiters: in the full run.
func TestExploreWaiters(t *testing.T) {
	if !exploreFull() {
		t.Skip("the full exploration runs with PROCLOCK_EXPLORE=full (.ci/run)")
	}
	runScenarios(t, false, slices.Concat(waiters, waitTriples))
}

// Waiters with one crash at any step, every schedule of 1 preemption:
// in the full run.
func TestExploreWaitersCrash(t *testing.T) {
	if !exploreFull() {
		t.Skip("the full exploration runs with PROCLOCK_EXPLORE=full (.ci/run)")
	}
	// Not the two pairs of one mechanism each waiting twice: with a
	// crash, their runs that spin until the step bound (800) cost each
	// crash point a run, over 4.5 and 6 CPU-minutes at 1 preemption.
	scs := slices.Clone(waiters[:1])
	for i := range scs {
		scs[i].heavy = false // 1 preemption: with a crash, 2 are too many schedules here
	}
	runScenarios(t, true, scs)
}

// A holder and two waiters (a SQLite one in the kernel's queue), in the
// normal run.
func TestExploreWaitTriple(t *testing.T) {
	if exploreFull() {
		t.Skip("TestExploreWaiters runs it in the full run")
	}
	runScenarios(t, false, waitTriples)
}

// triples are the three-user configurations.
var triples = []scenario{
	{users: []role{sqliteUser, fileUser, fileUser.called("file 2")}, heavy: true},
	{users: []role{sqliteRemove, sqliteRemove.called("sqlite(remove) 2"), fileUser}, heavy: true},
	{users: []role{sqliteRemove, fileUser, fileUser.called("file 2")}, heavy: true},
	// A file user converting a free database while a SQLite user takes
	// it and removes it, and a second file user creates the path anew,
	// with the removed file's inode number: two preemptions
	// (TestCaseConvertMeetsReusedInodeNumber).
	{users: []role{fileUser, sqliteRemove, fileUser.called("file 2")}, stage: stageFreeDatabase, heavy: true, preempt: 2},
	// windows: a SQLite holder with RemoveOnRelease removes its file
	// just after letting go, while a file user may have converted it
	// and a second one be about to create the path anew
	// (TestCaseRemoveAfterLettingGoMeetsFileHolder).
	{users: []role{{name: "sqlite(sql,remove) holder", sql: true, remove: true, holding: true}, fileUser, fileUser.called("file 2")}, windows: true, heavy: true, preempt: 2},
	// A user that creates the lock file and cannot write it (a full
	// disk) while a SQLite user locks it, and another creates the path
	// anew if it is removed (TestCaseFailedStampLeavesSQLiteProcessesFile,
	// TestCaseFailedDatabaseLeavesSQLiteProcessesFile). The removal's two
	// holders need three preemptions: with PROCLOCK_EXPLORE_PREEMPT=3 the
	// code that removed found them in each at about 8,500 runs; the code
	// that gives back passes all 175,502 and 202,443 (2-3 minutes each).
	{users: []role{{name: "file(full disk)", file: true, fullDisk: true}, sqliteUser, fileUser.called("file 2")}, heavy: true, preempt: 2},
	{users: []role{{name: "sqlite(full disk)", fullDisk: true}, sqliteUser.called("sqlite 2"), fileUser}, heavy: true, preempt: 2},
}

// Every pair, without crashes: in the normal run.
func TestExplorePairs(t *testing.T) {
	runScenarios(t, false, pairs)
}

// Every pair with one crash, and three users: in the full run.
func TestExploreCrashes(t *testing.T) {
	if !exploreFull() {
		t.Skip("the full exploration runs with PROCLOCK_EXPLORE=full (.ci/run)")
	}
	runScenarios(t, true, pairs)
}

func TestExploreThreeUsers(t *testing.T) {
	if !exploreFull() {
		t.Skip("the full exploration runs with PROCLOCK_EXPLORE=full (.ci/run)")
	}
	runScenarios(t, false, triples)
}

// claimedElsewhere reports whether another process of this run took t's
// exploration first. PROCLOCK_EXPLORE_CLAIMS names a directory that
// several processes running the explorations share (.ci/run starts one
// at the end of each of its lanes, each with GOMAXPROCS=1, where the
// explorer's hand-offs between its users' goroutines cost about 35 %
// less CPU than with two processors): each exploration is run by the
// first process to reach it, which claims it by creating a file of its
// name there, exclusively. Unset, every exploration runs here.
func claimedElsewhere(t *testing.T) bool {
	dir := os.Getenv("PROCLOCK_EXPLORE_CLAIMS")
	if dir == "" {
		return false
	}
	f, err := os.OpenFile(filepath.Join(dir, url.PathEscape(t.Name())), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if errors.Is(err, fs.ErrExist) {
		return true
	}
	if err != nil {
		t.Fatalf("claiming the exploration: %v", err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return false
}

// exploreCPU, where set (protocol_explore_linux_test.go), is the CPU time
// this process has used, user and system: runScenarios logs each
// exploration's, for .ci/run to list the costliest.
var exploreCPU func(testing.TB) time.Duration

// preemptEnv is PROCLOCK_EXPLORE_PREEMPT, a preemption bound that
// replaces every scenario's (for a deeper look by hand); 0 when unset.
func preemptEnv() int {
	var n int
	fmt.Sscan(os.Getenv("PROCLOCK_EXPLORE_PREEMPT"), &n)
	return n
}

// maxSteps is the step bound of a run of sc: more for waiters, whose
// waits are steps too.
func (sc scenario) maxSteps() int {
	if sc.steps > 0 {
		return sc.steps
	}
	if sc.spins {
		return 800
	}
	return 400
}
