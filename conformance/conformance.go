package conformance

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// testCase is one behaviour, checked in a fresh world.
type testCase struct {
	name string
	// only, when set, is the one mechanism the case is about.
	only proclock.Mechanism
	run  func(t *testing.T, c *env)
}

// env is what a case gets: its world, its mechanism, and helpers.
type env struct {
	World
	mech proclock.Mechanism
}

// lock is the path of the case's lock.
func (c *env) lock() string { return path.Join(c.Dir(), "app.lock") }

// Run puts h through every case of the suite, each in a fresh world, as
// subtests named for the case.
func Run(t *testing.T, h Harness) {
	for _, tc := range cases {
		if tc.only != "" && tc.only != h.Mechanism() {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			tc.run(t, &env{World: h.New(t), mech: h.Mechanism()})
		})
	}
}

var cases = []testCase{
	{name: "AcquireHeldRelease", run: testAcquireHeldRelease},
	{name: "DeadHolderReplaced", run: testDeadHolderReplaced},
	{name: "WaitForRelease", run: testWaitForRelease},
	{name: "WaitGivesUp", run: testWaitGivesUp},
	{name: "CancelledBeforeStart", run: testCancelledBeforeStart},
	{name: "IsHeldWritesNothing", run: testIsHeldWritesNothing},
	{name: "InspectStates", run: testInspectStates},
	{name: "BadInput", run: testBadInput},
	{name: "IdentityUnavailable", run: testIdentityUnavailable},
	{name: "ConcurrentTakeover", run: testConcurrentTakeover},
	{name: "RemoveOnRelease", run: testRemoveOnRelease},
	{name: "StaleStamps", run: testStaleStamps},
	{name: "UnjudgeableStamps", run: testUnjudgeableStamps},
	{name: "UnstampedWindow", only: proclock.MechanismFile, run: testUnstampedWindow},
	{name: "LegacyAndForeignStamps", run: testLegacyAndForeignStamps},
	{name: "HolderFile", only: proclock.MechanismSQLite, run: testHolderFile},
	{name: "ForeignFilesKept", run: testForeignFilesKept},
	{name: "MixedHolderNamed", run: testMixedHolderNamed},
	{name: "MixedAgedHolder", run: testMixedAgedHolder},
	{name: "MixedTakeTurns", run: testMixedTakeTurns},
	{name: "SameProcessTurns", run: testSameProcessTurns},
	{name: "WaitCancelled", run: testWaitCancelled},
}

// ctx gives a case's operations a bound, so that a broken lock fails the
// case instead of hanging the run.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// mustAcquire takes the lock for p or fails the case.
func mustAcquire(t *testing.T, p Peer, lock string, opts proclock.Options) {
	t.Helper()
	if err := p.Acquire(testContext(t), lock, opts); err != nil {
		t.Fatalf("pid %d: Acquire(%s): %v", p.Identity().PID, lock, err)
	}
}

// mustBeHeld checks that p's Acquire without waiting says held, and
// returns the holder it names.
func mustBeHeld(t *testing.T, p Peer, lock string) *platform.Identity {
	t.Helper()
	err := p.Acquire(testContext(t), lock, proclock.Options{})
	var held *proclock.HeldError
	if !errors.As(err, &held) || !errors.Is(err, proclock.ErrHeld) {
		if err == nil {
			p.Release(lock)
		}
		t.Fatalf("pid %d: Acquire(%s) = %v; want a *HeldError matching ErrHeld", p.Identity().PID, lock, err)
	}
	if held.Path != lock {
		t.Errorf("HeldError.Path = %q; want %q", held.Path, lock)
	}
	return held.Holder
}

// mustRelease releases p's lock or fails the case.
func mustRelease(t *testing.T, p Peer, lock string) {
	t.Helper()
	if err := p.Release(lock); err != nil {
		t.Fatalf("pid %d: Release(%s): %v", p.Identity().PID, lock, err)
	}
}

// wantHolder checks that a held error named want as holder.
func wantHolder(t *testing.T, got *platform.Identity, want platform.Identity) {
	t.Helper()
	if got == nil {
		t.Fatalf("holder unknown; want pid %d", want.PID)
	}
	if got.PID != want.PID || got.Host != want.Host || got.StartTime != want.StartTime {
		t.Fatalf("holder = %+v; want %+v", *got, want)
	}
}

// plant writes data at name through the world's own view, as another
// tool or an earlier holder would have left it.
func (c *env) plant(t *testing.T, name string, data []byte) {
	t.Helper()
	f, err := c.FS().OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatalf("staging %s: %v", name, err)
	}
	if _, err := f.Write(data); err != nil {
		t.Fatalf("staging %s: %v", name, err)
	}
	if err := f.Close(); err != nil {
		t.Fatalf("staging %s: %v", name, err)
	}
}

// plantStamp writes a proclock stamp of id at name.
func (c *env) plantStamp(t *testing.T, name string, id platform.Identity) {
	t.Helper()
	c.plant(t, name, lockrec.Record{Format: lockrec.Format, Identity: id, AcquiredAt: c.Now(), Nonce: "planted"}.Marshal())
}

// age makes the file at name look last written d ago.
func (c *env) age(t *testing.T, name string, d time.Duration) {
	t.Helper()
	then := c.Now().Add(-d)
	w, ok := c.World.(interface {
		Chtimes(name string, atime, mtime time.Time) error
	})
	if !ok {
		t.Fatalf("ageing %s: the World is on real time and has no Chtimes method (see World)", name)
	}
	if err := w.Chtimes(name, then, then); err != nil {
		t.Fatalf("ageing %s: %v", name, err)
	}
}

// mkdir makes the directory name through the World's Mkdir.
func (c *env) mkdir(t *testing.T, name string) {
	t.Helper()
	w, ok := c.World.(interface {
		Mkdir(name string, perm fs.FileMode) error
	})
	if !ok {
		t.Fatalf("staging %s: the World has no Mkdir method (see World)", name)
	}
	if err := w.Mkdir(name, 0o755); err != nil {
		t.Fatalf("staging %s: %v", name, err)
	}
}

// entry is what a snapshot records of one file.
type entry struct {
	id      lockfs.FileID
	mode    fs.FileMode
	size    int64
	mtime   time.Time
	content []byte
}

// snapshot records every file of the case's directory: name, inode, mode,
// size, time and bytes.
func (c *env) snapshot(t *testing.T) map[string]entry {
	t.Helper()
	d, err := c.FS().OpenFile(c.Dir(), os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	defer d.Close()
	lister, ok := d.(interface{ Readdirnames(n int) ([]string, error) })
	if !ok {
		t.Fatalf("snapshot: the FS's directory %s has no Readdirnames method (see World)", c.Dir())
	}
	names, err := lister.Readdirnames(-1)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	snap := map[string]entry{}
	for _, name := range names {
		full := path.Join(c.Dir(), name)
		info, err := c.FS().Lstat(full)
		if err != nil {
			t.Fatalf("snapshot: %v", err)
		}
		e := entry{mode: info.Mode(), size: info.Size(), mtime: info.ModTime()}
		e.id, _ = c.FS().FileID(full)
		if info.Mode().IsRegular() {
			e.content = readAll(t, c.FS(), full)
		}
		snap[name] = e
	}
	return snap
}

func readAll(t *testing.T, fsys lockfs.FS, name string) []byte {
	t.Helper()
	f, err := fsys.OpenFile(name, os.O_RDONLY, 0)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	if err != nil {
		t.Fatalf("reading %s: %v", name, err)
	}
	return b
}

// unchanged fails the case if the directory differs from before, naming
// what changed.
func (c *env) unchanged(t *testing.T, before map[string]entry, after string) {
	t.Helper()
	now := c.snapshot(t)
	var diffs []string
	for name, b := range before {
		a, ok := now[name]
		switch {
		case !ok:
			diffs = append(diffs, name+" removed")
		case !a.id.Same(b.id):
			diffs = append(diffs, name+" is another file")
		case a.mode != b.mode || a.size != b.size || !a.mtime.Equal(b.mtime) || !bytes.Equal(a.content, b.content):
			diffs = append(diffs, name+" changed")
		}
	}
	for name := range now {
		if _, ok := before[name]; !ok {
			diffs = append(diffs, name+" created")
		}
	}
	if len(diffs) > 0 {
		sort.Strings(diffs)
		t.Fatalf("after %s the directory changed: %s", after, strings.Join(diffs, ", "))
	}
}

// exists reports whether name exists, not following a symlink.
func (c *env) exists(t *testing.T, name string) bool {
	t.Helper()
	_, err := c.FS().Lstat(name)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("stat %s: %v", name, err)
	}
	return err == nil
}

// race runs f for each peer at once and returns their errors in order.
func race(peers []Peer, f func(Peer) error) []error {
	errs := make([]error, len(peers))
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() {
			<-start
			errs[i] = f(p)
		})
	}
	close(start)
	wg.Wait()
	return errs
}

func describe(errs []error) string {
	var b strings.Builder
	for i, err := range errs {
		fmt.Fprintf(&b, "\n  peer %d: %v", i, err)
	}
	return b.String()
}
