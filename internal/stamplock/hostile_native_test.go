//go:build linux || darwin || freebsd

package stamplock_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/internal/locktest"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/stamplock"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Hostile and broken lock files on the real filesystem, judged through the
// public API (proclock.Acquire, IsHeld, Inspect) with the file mechanism.
// These run where platform.Native can read this process's identity
// (linux, darwin, freebsd), which the file mechanism needs.

// nativeFile is this OS's platform with the file mechanism.
func nativeFile() *platform.Platform {
	return platform.Native().WithoutSQLite()
}

func nativeSelf(t *testing.T) platform.Identity {
	t.Helper()
	id, err := platform.Native().Process.Self()
	if err != nil {
		t.Fatalf("Self: %v", err)
	}
	return id
}

// ageBy sets path's times back by d without following a symlink, so that
// a FIFO, a symlink or a loop can be aged like a regular file.
func ageBy(t *testing.T, path string, d time.Duration) {
	t.Helper()
	then := unix.NsecToTimeval(time.Now().Add(-d).UnixNano())
	if err := unix.Lutimes(path, []unix.Timeval{then, then}); err != nil {
		t.Fatalf("ageing %s: %v", path, err)
	}
}

// watchdog runs fn and fails the test if it does not return within a
// generous bound: a FIFO opened for reading without O_NONBLOCK would block
// forever. unblock, when set, is run on timeout to free the stuck call.
func watchdog(t *testing.T, what string, unblock func(), fn func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn()
	}()
	timer := time.NewTimer(30 * time.Second)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		if unblock != nil {
			unblock()
		}
		t.Fatalf("%s did not return within 30 s: it blocked", what)
	}
}

// stampOf is a proclock stamp of id.
func stampOf(id platform.Identity, at time.Time) []byte {
	return lockrec.Record{Format: lockrec.Format, Identity: id, AcquiredAt: at, Nonce: "hostile-test"}.Marshal()
}

// padTo pads b with trailing spaces to n bytes: still the same stamp, since
// whitespace after a JSON value is allowed.
func padTo(b []byte, n int) []byte {
	return append(b, bytes.Repeat([]byte(" "), n-len(b))...)
}

// expectation is how the lock must be judged.
type expectation int

const (
	// unjudged: held (holder unknown) while young; stale, and
	// reclaimed, once older than stamplock.UnstampedWindow.
	unjudged expectation = iota
	// liveHolder: held by the recorded holder, whatever the file's age.
	liveHolder
	// foreverHeld: a holder that cannot be judged from here (other
	// host): held whatever its age.
	foreverHeld
	// deadHolder: stale at once, and reclaimed.
	deadHolder
	// foreign: not a lock file, young or old: Acquire and IsHeld fail
	// with ErrNotLockFile, Inspect says foreign, and nothing changes,
	// on either mechanism.
	foreign
)

// TestHostileLockFilesNative: every hostile or broken lock file is judged
// as docs/protocol.md says, never panics, never blocks, and never wedges the lock
// past the 30 s window of an unjudgeable file.
func TestHostileLockFilesNative(t *testing.T) {
	here := nativeSelf(t)
	longAgo := time.Now().Add(-365 * 24 * time.Hour)
	otherHost := here
	otherHost.Host = "elsewhere.invalid"
	reused := here
	reused.StartTime++ // our pid with another start time: a reused pid
	gone := here
	gone.PID = locktest.DeadPID(t)
	gone.StartTime = 0

	for _, tc := range []struct {
		name   string
		stage  func(t *testing.T, path string, v locktest.Victim)
		want   expectation
		holder *platform.Identity // who a held error names; nil: unknown
		reason string             // Inspect's reason once stale
	}{
		{name: "binary junk", stage: writeBytes([]byte("\x00\x01\x02\xfe\xff\x7fELF\x00\x00")), want: foreign},
		{name: "empty (crash between create and stamp)", stage: writeBytes(nil), reason: "unstamped past 30 s"},
		{name: "whitespace only", stage: writeBytes([]byte(" \n\t\n")), want: foreign},
		{name: "a script", stage: writeBytes([]byte("#!/bin/sh\nexec flock -en \"$0\" true\n")), want: foreign},
		{name: "junk of exactly 64 KiB", stage: writeBytes(bytes.Repeat([]byte{0xA5}, lockrec.MaxSize)), want: foreign},
		{name: "junk of 64 KiB + 1", stage: writeBytes(bytes.Repeat([]byte{0xA5}, lockrec.MaxSize+1)), want: foreign},
		// Exactly 64 KiB is read normally: a live holder's stamp padded
		// to the limit is that holder's, and it is never reclaimed.
		{name: "live stamp padded to exactly 64 KiB", stage: writeBytes(padTo(stampOf(here, time.Now()), lockrec.MaxSize)), want: liveHolder, holder: &here},
		// One byte more and the same stamp is not read at all.
		{name: "live stamp padded to 64 KiB + 1", stage: writeBytes(padTo(stampOf(here, time.Now()), lockrec.MaxSize+1)), want: foreign},
		{name: "fifo", stage: mkfifo, want: foreign},
		{name: "symlink to a victim", stage: symlinkTo(func(v locktest.Victim) string { return v.Path }), want: foreign},
		{name: "symlink to itself", stage: symlinkTo(func(locktest.Victim) string { return "x.lock" }), want: foreign},
		{name: `pid "12"`, stage: writeBytes([]byte(`{"pid":"12"}`)), want: foreign},
		{name: "pid 0", stage: writeBytes([]byte(`{"pid":0}`)), want: foreign},
		{name: "pid -1", stage: writeBytes([]byte(`{"pid":-1}`)), want: foreign},
		// Read as pid 1 (init, always alive) it would wedge the lock.
		{name: "pid 1.5", stage: writeBytes([]byte(`{"pid":1.5}`)), want: foreign},
		{name: "pid 2^63", stage: writeBytes([]byte(`{"pid":9223372036854775808}`)), want: foreign},
		{name: "legacy pid 2^63", stage: writeBytes([]byte("9223372036854775808\n")), want: foreign},
		{name: "1 MB host string", stage: writeBytes([]byte(`{"format":"proclock/1","host":"` + strings.Repeat("h", 1<<20) + `","pid":1}`)), want: foreign},
		{name: "byte order mark before a live stamp", stage: writeBytes(append([]byte("\ufeff"), stampOf(here, time.Now())...)), want: foreign},
		{name: "trailing garbage after a live stamp", stage: writeBytes(append(stampOf(here, time.Now()), "garbage"...)), want: foreign},
		{name: "truncated stamp", stage: writeBytes(stampOf(here, time.Now())[:40]), reason: "unreadable past 30 s"},
		// Another host's holder cannot be judged from here: held forever,
		// however old the stamp and the file.
		{name: "valid stamp of another host, a year old", stage: writeBytes(stampOf(otherHost, longAgo)), want: foreverHeld, holder: &otherHost},
		// Stale files after kill -9: the recorded pid is gone.
		{name: "stamp of a killed holder", stage: writeBytes(stampOf(gone, time.Now())), want: deadHolder, reason: "pid gone"},
		// Pid reuse must not wedge the lock: our pid, another start time.
		{name: "stamp of a reused pid", stage: writeBytes(stampOf(reused, time.Now())), want: deadHolder, reason: "pid reused"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "x.lock")
			v := locktest.NewVictim(t, dir)
			tc.stage(t, path, v)
			if tc.want == foreverHeld || tc.want == liveHolder {
				// Locks are never taken from a live or unjudgeable
				// holder, however old.
				ageBy(t, path, 365*24*time.Hour)
			}
			unblock := func() { unblockFIFO(path) }

			if tc.want == foreign {
				for _, age := range []time.Duration{0, 365 * 24 * time.Hour} {
					ageBy(t, path, age)
					watchdog(t, "judging "+tc.name, unblock, func() { expectForeign(t, path) })
				}
				v.Check(t)
				return
			}
			young := tc.want
			if young == unjudged {
				young = liveHolder // held, with the holder tc.holder (unknown)
			}
			watchdog(t, "judging "+tc.name, unblock, func() { expectJudged(t, path, young, tc.holder, tc.reason) })
			if tc.want == unjudged {
				ageBy(t, path, stamplock.UnstampedWindow+time.Second)
				watchdog(t, "judging the aged "+tc.name, unblock, func() { expectJudged(t, path, deadHolder, nil, tc.reason) })
			}
			v.Check(t)
			if tc.want == unjudged || tc.want == deadHolder {
				watchdog(t, "reclaiming "+tc.name, unblock, func() { expectReclaimed(t, path) })
			}
			v.Check(t)
		})
	}
}

func writeBytes(data []byte) func(t *testing.T, path string, _ locktest.Victim) {
	return func(t *testing.T, path string, _ locktest.Victim) {
		t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func mkfifo(t *testing.T, path string, _ locktest.Victim) {
	t.Helper()
	if err := unix.Mkfifo(path, 0o644); err != nil {
		t.Fatal(err)
	}
}

func symlinkTo(target func(locktest.Victim) string) func(t *testing.T, path string, v locktest.Victim) {
	return func(t *testing.T, path string, v locktest.Victim) {
		t.Helper()
		if err := os.Symlink(target(v), path); err != nil {
			t.Fatal(err)
		}
	}
}

// unblockFIFO opens a FIFO at path for reading and writing, which never
// blocks and lets a reader stuck in open(2) through.
func unblockFIFO(path string) {
	if f, err := os.OpenFile(path, os.O_RDWR|unix.O_NONBLOCK|unix.O_NOFOLLOW, 0); err == nil {
		f.Close()
	}
}

// expectForeign checks that neither mechanism takes, changes or removes
// the file at path, and that both say it is not a lock file.
func expectForeign(t *testing.T, path string) {
	t.Helper()
	ctx := context.Background()
	before := snapshot(t, path)
	for _, p := range []*platform.Platform{nativeFile(), platform.Native()} {
		if st, err := proclock.Inspect(ctx, p, path); err != nil || st.State != proclock.StateForeign {
			t.Fatalf("Inspect = %+v, %v; want foreign", st, err)
		}
		if _, err := proclock.IsHeld(ctx, p, path); !errors.Is(err, proclock.ErrNotLockFile) {
			t.Fatalf("IsHeld = %v; want an error matching ErrNotLockFile", err)
		}
		for _, opts := range []proclock.Options{{}, {RemoveOnRelease: true}} {
			l, err := proclock.Acquire(ctx, p, path, opts)
			if err == nil {
				l.Release()
			}
			if !errors.Is(err, proclock.ErrNotLockFile) {
				t.Fatalf("Acquire(%+v) = %v; want an error matching ErrNotLockFile", opts, err)
			}
		}
		if after := snapshot(t, path); after != before {
			t.Fatalf("a file that is not a lock file changed: %s; was %s", after, before)
		}
	}
}

// expectJudged checks what Acquire, IsHeld and Inspect say of path:
// liveHolder and foreverHeld mean held by holder (nil: unknown); deadHolder
// means stale for reason, without taking it (Inspect and IsHeld only).
func expectJudged(t *testing.T, path string, want expectation, holder *platform.Identity, reason string) {
	t.Helper()
	ctx := context.Background()
	p := nativeFile()
	before := snapshot(t, path)
	st, err := proclock.Inspect(ctx, p, path)
	if err != nil {
		t.Fatalf("Inspect: %v", err)
	}
	held, err := proclock.IsHeld(ctx, p, path)
	if err != nil {
		t.Fatalf("IsHeld: %v", err)
	}
	if want == deadHolder {
		if st.State != proclock.StateStale || st.Reason != reason || held {
			t.Fatalf("Inspect = %s (%q), IsHeld = %v; want stale (%q), not held", st.State, st.Reason, held, reason)
		}
		// Looking wrote nothing: the stale file is left for Acquire.
		if after := snapshot(t, path); after != before {
			t.Fatalf("Inspect changed the stale file: %s; was %s", after, before)
		}
		return
	}
	if st.State != proclock.StateHeld || !held {
		t.Fatalf("Inspect = %s (%q), IsHeld = %v; want held", st.State, st.Reason, held)
	}
	if !sameHolder(st.Holder, holder) {
		t.Fatalf("Inspect names holder %v; want %v", st.Holder, holder)
	}
	l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
	if err == nil {
		l.Release()
		t.Fatalf("Acquire took a held lock")
	}
	he, ok := errors.AsType[*proclock.HeldError](err)
	if !ok || !errors.Is(err, proclock.ErrHeld) {
		t.Fatalf("Acquire = %v; want a *HeldError", err)
	}
	if !sameHolder(he.Holder, holder) {
		t.Fatalf("held error names holder %v; want %v", he.Holder, holder)
	}
	if after := snapshot(t, path); after != before {
		t.Fatalf("a held lock's file changed: %s; was %s", after, before)
	}
}

// snapshot describes the file at path without following a symlink and
// without opening anything but a regular file (a FIFO would block the
// test itself): kind, size, mtime, and the bytes of a regular file.
func snapshot(t *testing.T, path string) string {
	t.Helper()
	info, err := os.Lstat(path)
	if err != nil {
		t.Fatalf("the lock's file is gone: %v", err)
	}
	s := fmt.Sprintf("%v %d %v", info.Mode(), info.Size(), info.ModTime())
	if info.Mode().IsRegular() {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		s += fmt.Sprintf(" %x", sha256.Sum256(data))
	}
	return s
}

func sameHolder(got, want *platform.Identity) bool {
	if got == nil || want == nil {
		return got == want
	}
	return got.Host == want.Host && got.PID == want.PID
}

// expectReclaimed checks that Acquire takes the lock from a stale file,
// leaves a regular file with our stamp and nothing else behind, and that
// Release removes it.
func expectReclaimed(t *testing.T, path string) {
	t.Helper()
	l, err := proclock.Acquire(context.Background(), nativeFile(), path, proclock.Options{})
	if err != nil {
		t.Fatalf("Acquire of a stale lock: %v", err)
	}
	info, err := os.Lstat(path)
	if err != nil || !info.Mode().IsRegular() {
		t.Fatalf("after reclaim, %s is %v (%v); want our regular lock file", path, info, err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if s, err := lockrec.Parse(data); err != nil || s.PID != os.Getpid() || s.Format != lockrec.Format {
		t.Fatalf("after reclaim the lock file holds %q (%v); want our stamp", data, err)
	}
	if err := l.Release(); err != nil {
		t.Fatalf("Release: %v", err)
	}
	entries, err := os.ReadDir(filepath.Dir(path))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if e.Name() != "victim" {
			t.Errorf("left behind after reclaim and release: %s", e.Name())
		}
	}
}

// TestDirectoryAtPathNative: a directory at the path is an error wrapping
// *fs.PathError from Acquire, IsHeld and Inspect; it is neither held nor
// stale, and nothing is created or removed.
func TestDirectoryAtPathNative(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "x.lock")
	if err := os.Mkdir(path, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	p := nativeFile()
	l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
	if err == nil {
		l.Release()
		t.Fatal("Acquire took a directory as a lock")
	}
	if _, ok := errors.AsType[*fs.PathError](err); !ok || errors.Is(err, proclock.ErrHeld) || !errors.Is(err, lockfs.ErrIsDir) {
		t.Fatalf("Acquire = %v; want a *fs.PathError matching EISDIR, not held", err)
	}
	if _, err := proclock.IsHeld(ctx, p, path); !errors.Is(err, lockfs.ErrIsDir) {
		t.Fatalf("IsHeld = %v; want EISDIR", err)
	}
	if _, err := proclock.Inspect(ctx, p, path); !errors.Is(err, lockfs.ErrIsDir) {
		t.Fatalf("Inspect = %v; want EISDIR", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].Name() != "x.lock" || !entries[0].IsDir() {
		t.Fatalf("directory now holds %v; want only the x.lock directory", entries)
	}
	if inner, _ := os.ReadDir(path); len(inner) != 0 {
		t.Fatalf("something was created inside the directory: %v", inner)
	}
}

// frozenClock tells one fixed time; sleeping returns at once.
type frozenClock struct{ now time.Time }

func (c frozenClock) Now() time.Time { return c.now }

func (c frozenClock) Sleep(ctx context.Context, _ time.Duration) error { return ctx.Err() }

// TestUnstampedWindowBoundaryNative: on the real filesystem, an empty file
// or a torn stamp is held at exactly 30 s after its mtime and stale a
// nanosecond later (strict).
func TestUnstampedWindowBoundaryNative(t *testing.T) {
	for _, tc := range []struct {
		name   string
		stage  func(t *testing.T, path string, v locktest.Victim)
		reason string
	}{
		{"empty", writeBytes(nil), "unstamped past 30 s"},
		{"torn stamp", writeBytes([]byte(`{"format":"proclock/1","host":"h`)), "unreadable past 30 s"},
		{"torn stamp of exactly 64 KiB", writeBytes(append([]byte(`{"format":"proclock/1","host":"`), bytes.Repeat([]byte("z"), lockrec.MaxSize-31)...)), "unreadable past 30 s"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "x.lock")
			tc.stage(t, path, locktest.Victim{})
			info, err := os.Lstat(path)
			if err != nil {
				t.Fatal(err)
			}
			at := func(d time.Duration) *platform.Platform {
				return &platform.Platform{FS: lockfs.OS(), Process: platform.Native().Process, Clock: frozenClock{info.ModTime().Add(d)}}
			}
			ctx := context.Background()
			watchdog(t, "judging "+tc.name, func() { unblockFIFO(path) }, func() {
				st, err := proclock.Inspect(ctx, at(stamplock.UnstampedWindow), path)
				if err != nil || st.State != proclock.StateHeld || st.Holder != nil {
					t.Fatalf("at exactly 30 s: Inspect = %+v, %v; want held, holder unknown", st, err)
				}
				if _, err := proclock.Acquire(ctx, at(stamplock.UnstampedWindow), path, proclock.Options{}); !errors.Is(err, proclock.ErrHeld) {
					t.Fatalf("at exactly 30 s: Acquire = %v; want held", err)
				}
				late := at(stamplock.UnstampedWindow + time.Nanosecond)
				st, err = proclock.Inspect(ctx, late, path)
				if err != nil || st.State != proclock.StateStale || st.Reason != tc.reason {
					t.Fatalf("30 s + 1 ns: Inspect = %+v, %v; want stale (%s)", st, err, tc.reason)
				}
				l, err := proclock.Acquire(ctx, late, path, proclock.Options{})
				if err != nil {
					t.Fatalf("30 s + 1 ns: Acquire = %v; want the lock", err)
				}
				if err := l.Release(); err != nil {
					t.Fatal(err)
				}
			})
		})
	}
}

// FuzzLookNative: any bytes in a real lock file are judged without a
// panic, as docs/protocol.md says: a stamp by its holder, whatever its
// age; an empty file or a torn stamp held, holder unknown, until 30 s after
// its mtime, and stale after; a SQLite database without a mark free at
// once; anything else not a lock file, young or old.
func FuzzLookNative(f *testing.F) {
	for _, seed := range [][]byte{
		nil, []byte(" \n"), []byte("4242\n"), []byte(`{"pid":1}`), []byte(`{"host":"far","pid":1}`),
		[]byte(`{"pid":"12"}`), []byte(`{"pid":1.5}`), []byte("\ufeff{\"pid\":1}"), []byte(`{"pid":1}garbage`),
		[]byte("\x00\xff\xfe"),
	} {
		f.Add(seed)
	}
	here, err := platform.Native().Process.Self()
	if err != nil {
		f.Fatal(err)
	}
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		path := filepath.Join(dir, "x.lock")
		os.Remove(path)
		if err := os.WriteFile(path, data, 0o644); err != nil {
			t.Fatal(err)
		}
		info, err := os.Lstat(path)
		if err != nil {
			t.Fatal(err)
		}
		at := func(d time.Duration) *platform.Platform {
			return &platform.Platform{FS: lockfs.OS(), Process: platform.Native().Process, Clock: frozenClock{info.ModTime().Add(d)}}
		}
		young, yerr := stamplock.Look(at(0), here, path, false)
		old, oerr := stamplock.Look(at(stamplock.UnstampedWindow+time.Nanosecond), here, path, false)
		kind := lockrec.Classify(data)
		switch {
		case kind == lockrec.Foreign || len(data) > lockrec.MaxSize:
			if !errors.Is(yerr, lockrec.ErrNotLockFile) || !errors.Is(oerr, lockrec.ErrNotLockFile) {
				t.Fatalf("not a lock file %q: %v, %v; want ErrNotLockFile both times", data, yerr, oerr)
			}
			return
		case yerr != nil || oerr != nil:
			t.Fatalf("Look(%q): %v, %v", data, yerr, oerr)
		case kind == lockrec.SQLite:
			if young.State != lockrec.StateStale || old.State != lockrec.StateStale {
				t.Fatalf("a SQLite database without a mark %q: young %+v, old %+v; want free (stale) at once", data, young, old)
			}
			return
		case kind != lockrec.Stamp:
			if young.Stamp != nil || young.State != lockrec.StateHeld || old.State != lockrec.StateStale {
				t.Fatalf("unjudgeable %q: young %+v, old %+v; want held, then stale", data, young, old)
			}
			return
		}
		s, _ := lockrec.Parse(data)
		if young.Stamp == nil || young.Stamp.Identity != s.Identity || young.State != old.State {
			t.Fatalf("stamp %+v in %q: young %+v, old %+v; want it judged, whatever the file's age", s, data, young, old)
		}
	})
}
