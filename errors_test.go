package proclock_test

import (
	"context"
	"errors"
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// limitedFS is a fake world's FS with linux's path limits.
type limitedFS struct{ lockfs.FS }

func (limitedFS) PathLimits() (int, int) { return 4095, 255 }

// TestErrorsInPlainWords: Acquire's errors are one line, "proclock:
// acquire PATH: CAUSE", the cause in plain words, and match what they
// wrap (docs/design.md, "Errors in plain words").
func TestErrorsInPlainWords(t *testing.T) {
	long := "/tmp/" + strings.Repeat("d", 200) + "/" + strings.Repeat("n", 256)
	for _, tc := range []struct {
		name  string
		path  string
		setup func(w *fake.World)
		fsys  func(lockfs.FS) lockfs.FS
		cause string
		is    error
	}{
		{name: "missing directory", path: "/tmp/nowhere/x.lock", cause: "no such directory", is: fs.ErrNotExist},
		{name: "directory", path: "/tmp/d", setup: func(w *fake.World) { w.Mkdir("/tmp/d", 0o755) }, cause: "is a directory", is: lockfs.ErrIsDir},
		{name: "not a lock file", path: "/tmp/s", setup: func(w *fake.World) { w.WriteFile("/tmp/s", []byte("#!/bin/sh\n"), 0o755) },
			cause: "not a lock file: proclock never changes it; lock another path", is: proclock.ErrNotLockFile},
		{name: "socket", path: "/tmp/sock", setup: func(w *fake.World) { w.Mknod("/tmp/sock", fs.ModeSocket|0o644) },
			cause: "not a lock file: proclock never changes it; lock another path", is: proclock.ErrNotLockFile},
		{name: "name too long", path: long, fsys: func(f lockfs.FS) lockfs.FS { return limitedFS{f} },
			cause: "name too long: the file name is 256 bytes, over the 255 this system takes", is: proclock.ErrPathTooLong},
		{name: "network filesystem", path: "/tmp/x.lock", fsys: func(f lockfs.FS) lockfs.FS { return &networkFS{f, fakeRanges{f.(lockfs.RangeLocker)}} },
			cause: "on a network filesystem (nfs), where locks are not reliable (Options.AllowNetworkFS locks there anyway)", is: proclock.ErrNetworkFS},
		{name: "empty path", path: "", cause: "empty path", is: fs.ErrInvalid},
	} {
		for _, mech := range mechanisms {
			t.Run(tc.name+"/"+string(mech), func(t *testing.T) {
				w := fake.New()
				if tc.setup != nil {
					tc.setup(w)
				}
				p := w.Spawn().Platform()
				if mech == proclock.MechanismFile {
					p = p.WithoutSQLite()
				}
				if tc.fsys != nil {
					p.FS = tc.fsys(p.FS)
				}
				_, err := proclock.Acquire(context.Background(), p, tc.path, proclock.Options{})
				if want := "proclock: acquire " + tc.path + ": " + tc.cause; err == nil || err.Error() != want {
					t.Errorf("Acquire: %v\nwant %s", err, want)
				}
				if !errors.Is(err, tc.is) {
					t.Errorf("Acquire: %v; want it to match %v", err, tc.is)
				}
				if _, ok := errors.AsType[*proclock.Error](err); !ok {
					t.Errorf("Acquire: %T; want a *proclock.Error", err)
				}
			})
		}
	}
}

// TestCancelledWaitMatchesBoth: a wait that ctx ends returns an error
// matching ctx.Err() and, naming the holder waited for, ErrHeld and
// *HeldError, as Acquire's doc says; the README's waiting snippet tests
// ctx.Err() first for that reason.
func TestCancelledWaitMatchesBoth(t *testing.T) {
	w := fake.New()
	holder, waiter := w.Spawn(), w.Spawn()
	l, err := proclock.Acquire(context.Background(), holder.Platform(), "/app.lock", proclock.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer l.Release()
	took := w.Now()
	w.Freeze()
	ctx, cancel := context.WithCancel(context.Background())
	res := make(chan error, 1)
	go func() {
		_, err := proclock.Acquire(ctx, waiter.Platform(), "/app.lock", proclock.Options{Wait: true})
		res <- err
	}()
	for range 5 { // past the first attempt, into the waits between attempts
		if err := w.WaitSleepers(context.Background(), 1); err != nil {
			t.Fatal(err)
		}
		w.Advance(100 * time.Millisecond)
	}
	if err := w.WaitSleepers(context.Background(), 1); err != nil {
		t.Fatal(err)
	}
	cancel()
	err = <-res
	held, isHeld := errors.AsType[*proclock.HeldError](err)
	if !errors.Is(err, context.Canceled) || !errors.Is(err, proclock.ErrHeld) || !isHeld || held.Holder == nil || held.Holder.PID != holder.PID() {
		t.Errorf("Acquire, its wait cancelled = %v; want it to match context.Canceled, ErrHeld and *HeldError naming pid %d", err, holder.PID())
	}
	if isHeld && (held.Since.IsZero() || !held.Since.Equal(took)) {
		t.Errorf("Acquire, its wait cancelled: HeldError.Since %v, want when the holder took the lock, %v", held.Since, took)
	}
}

// TestHeldErrorSince: the root's HeldError is a struct of its own (go doc
// shows its fields), and a held error of either mechanism, against a
// holder of either, says since when the holder holds.
func TestHeldErrorSince(t *testing.T) {
	if pkg := reflect.TypeFor[proclock.HeldError]().PkgPath(); pkg != "github.com/proclock/proclock" {
		t.Errorf("HeldError is declared in %s, want the root package", pkg)
	}
	if pkg := reflect.TypeFor[proclock.State]().PkgPath(); pkg != "github.com/proclock/proclock" {
		t.Errorf("State is declared in %s, want the root package", pkg)
	}
	for _, holds := range mechanisms {
		for _, takes := range mechanisms {
			t.Run(string(holds)+"/"+string(takes), func(t *testing.T) {
				w := fake.New()
				w.Advance(time.Hour)
				l, err := proclock.Acquire(context.Background(), platformOf(w.Spawn(), holds), "/app.lock", proclock.Options{})
				if err != nil {
					t.Fatal(err)
				}
				defer l.Release()
				took := w.Now()
				w.Advance(time.Minute)
				_, err = proclock.Acquire(context.Background(), platformOf(w.Spawn(), takes), "/app.lock", proclock.Options{})
				held, ok := errors.AsType[*proclock.HeldError](err)
				if !ok || !errors.Is(err, proclock.ErrHeld) || held.Holder == nil {
					t.Fatalf("Acquire = %v; want a *HeldError naming the holder", err)
				}
				if !held.Since.Equal(took) {
					t.Errorf("HeldError.Since = %v, want %v", held.Since, took)
				}
			})
		}
	}
}

// platformOf is p's platform, with mechanism m.
func platformOf(p *fake.Process, m proclock.Mechanism) *platform.Platform {
	if m == proclock.MechanismFile {
		return p.Platform().WithoutSQLite()
	}
	return p.Platform()
}

// TestWaitAndDropDocs holds the docs to what TestCancelledWaitMatchesBoth
// and TestDroppedLockStaysHeldFake show. Acquire's doc says a wait that
// ctx ended matches ctx.Err() and *HeldError both, and to test ctx.Err()
// first. Each README snippet that waits tests ctx before *HeldError, so
// that a shutdown does not read as "already running". Lock's and
// Acquire's docs say that a dropped *Lock stays held.
func TestWaitAndDropDocs(t *testing.T) {
	fset := token.NewFileSet()
	var files []*ast.File
	names, err := fs.Glob(os.DirFS("."), "*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	pkg, err := doc.NewFromFiles(fset, files, "github.com/proclock/proclock")
	if err != nil {
		t.Fatal(err)
	}
	docs := map[string]string{}
	for _, typ := range pkg.Types {
		docs[typ.Name] = typ.Doc
		for _, f := range typ.Funcs { // Acquire is listed as Lock's constructor
			docs[f.Name] = f.Doc
		}
	}
	for _, c := range []struct{ name, says string }{
		{"Acquire", "returns an error matching ctx.Err(). That error matches ErrHeld and *HeldError too"},
		{"Acquire", "test ctx.Err() (or errors.Is(err, context.Canceled)) before errors.AsType[*HeldError]"},
		{"Acquire", "The lock stays held until Release or the process's exit, even when the *Lock is dropped"},
		{"Lock", "A Lock that is dropped without Release stays held for the rest of the process's life"},
	} {
		if !strings.Contains(strings.Join(strings.Fields(docs[c.name]), " "), c.says) {
			t.Errorf("go doc proclock.%s does not say %q", c.name, c.says)
		}
	}

	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	waits := 0
	for _, block := range goBlocks(string(readme)) {
		held := strings.Index(block, "errors.AsType[*proclock.HeldError]")
		if !strings.Contains(block, "Wait: true") || held < 0 {
			continue
		}
		waits++
		if ctx := strings.Index(block, "ctx.Err()"); ctx < 0 || ctx > held {
			t.Errorf("README's waiting snippet tests *HeldError before ctx.Err(): a shutdown reads as already running\n%s", block)
		}
	}
	if waits == 0 {
		t.Error("README has no snippet that waits (Options{Wait: true}) and tests *HeldError; want one, ctx.Err() tested first")
	}
}
