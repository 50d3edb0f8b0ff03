package fake_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"reflect"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/lockfs"
)

// A holder stalled between two steps (create, then write) while another
// process acts: the other sees the empty file it left.
func TestHookStallsAProcessBetweenTwoSteps(t *testing.T) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	const lock = "/tmp/app.lock"
	stalled, release := make(chan struct{}), make(chan struct{})
	w.After("open", lock, func(ev fake.Event) error {
		if ev.PID == a.PID() {
			close(stalled)
			<-release
		}
		return nil
	})

	done := make(chan error, 1)
	go func() {
		f, err := a.FS().OpenFile(lock, fsx.CreateExcl, 0o644)
		if err != nil {
			done <- err
			return
		}
		_, err = f.Write([]byte("a"))
		done <- errors.Join(err, f.Close())
	}()

	<-stalled
	if _, err := b.FS().OpenFile(lock, fsx.CreateExcl, 0o644); !errors.Is(err, fs.ErrExist) {
		t.Errorf("second creator while the first is stalled: %v, want ErrExist", err)
	}
	if got, err := readFile(b.FS(), lock); err != nil || len(got) != 0 {
		t.Errorf("the stalled holder's file reads %q, %v; want empty", got, err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatalf("the stalled process, released: %v", err)
	}
	if got, err := readFile(b.FS(), lock); err != nil || string(got) != "a" {
		t.Errorf("after release the file reads %q, %v; want %q", got, err, "a")
	}
}

// A crash between two steps: the process dies after its create; its write
// fails and the file stays empty.
func TestHookKillsAProcessBetweenTwoSteps(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	const lock = "/tmp/app.lock"
	w.After("open", lock, func(ev fake.Event) error {
		if ev.PID == p.PID() && ev.Err == nil {
			p.Kill()
		}
		return nil
	})
	f, err := p.FS().OpenFile(lock, fsx.CreateExcl, 0o644)
	if err != nil {
		t.Fatalf("the create itself: %v", err)
	}
	if _, err := f.Write([]byte("stamp")); !errors.Is(err, fake.ErrKilled) {
		t.Errorf("write after the crash: %v, want ErrKilled", err)
	}
	var pe *fs.PathError
	if _, err := f.Write([]byte("stamp")); !errors.As(err, &pe) {
		t.Errorf("write after the crash: %v is not a *fs.PathError", err)
	}
	fi, err := w.Stat(lock)
	if err != nil || fi.Size() != 0 {
		t.Errorf("the crashed holder's file: %v, %v; want an empty file", fi, err)
	}
	if w.OpenFiles() != 0 {
		t.Errorf("%d files open after the crash", w.OpenFiles())
	}
}

func TestBeforeHookStagesEACCESOnRead(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	const lock = "/tmp/app.lock"
	if err := w.WriteFile(lock, []byte("stamp"), 0o644); err != nil {
		t.Fatal(err)
	}
	remove := w.Before("open", lock, func(fake.Event) error { return syscall.EACCES })

	for _, open := range []func(string) (lockfs.File, error){openRead(p.FS()), p.FS().OpenNoFollow} {
		_, err := open(lock)
		var pe *fs.PathError
		if !errors.As(err, &pe) || pe.Op != "open" || pe.Path != lock || !errors.Is(err, fs.ErrPermission) {
			t.Errorf("open with a Before hook failing EACCES: %v, want a *fs.PathError open %s matching ErrPermission", err, lock)
		}
	}
	if w.OpenFiles() != 0 {
		t.Errorf("refused opens left %d files open", w.OpenFiles())
	}
	remove()
	remove() // harmless
	if got, err := readFile(p.FS(), lock); err != nil || string(got) != "stamp" {
		t.Errorf("read after removing the hook: %q, %v", got, err)
	}
}

func TestChmodStagesEACCESForProcessesOnly(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	if err := w.WriteFile("/tmp/secret", []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := w.Chmod("/tmp/secret", 0o200); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		do   func(lockfs.FS) error
	}{
		{"read an unreadable file", func(fsys lockfs.FS) error { _, err := readFile(fsys, "/tmp/secret"); return err }},
	}
	for _, tt := range tests {
		if err := tt.do(p.FS()); !errors.Is(err, syscall.EACCES) {
			t.Errorf("%s as a process: %v, want EACCES", tt.name, err)
		}
		if err := tt.do(w.FS()); err != nil {
			t.Errorf("%s as the world (root): %v", tt.name, err)
		}
	}
}

// A Before hook's error, or a kill in it, stops the operation, which does
// nothing; an After hook's error replaces the result of an operation that
// happened.
func TestHookErrors(t *testing.T) {
	refused := errors.New("staged failure")
	cases := []struct {
		name  string
		op    string
		path  string
		after bool
		hook  func(p *fake.Process) error
		do    func(lockfs.FS) error
		want  error
		// what the operation touched, after: "" missing, else its content
		file, content string
	}{
		{"Before refuses a Rename, matched by its new name", "rename", "/tmp/b", false,
			func(*fake.Process) error { return refused }, func(f lockfs.FS) error { return f.Rename("/tmp/a", "/tmp/b") }, refused, "/tmp/a", "a"},
		{"Before refuses a Remove", "remove", "/tmp/a", false,
			func(*fake.Process) error { return refused }, func(f lockfs.FS) error { return f.Remove("/tmp/a") }, refused, "/tmp/a", "a"},
		{"Before kills the remover", "remove", "/tmp/a", false,
			func(p *fake.Process) error { p.Kill(); return nil }, func(f lockfs.FS) error { return f.Remove("/tmp/a") }, fake.ErrKilled, "/tmp/a", "a"},
		{"After fails a create", "open", "/tmp/c", true,
			func(*fake.Process) error { return syscall.EIO }, func(f lockfs.FS) error {
				_, err := f.OpenFile("/tmp/c", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
				return err
			}, syscall.EIO, "/tmp/c", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			w := fake.New()
			p := w.Spawn()
			if err := w.WriteFile("/tmp/a", []byte("a"), 0o644); err != nil {
				t.Fatal(err)
			}
			hook := w.Before
			if c.after {
				hook = w.After
			}
			hook(c.op, c.path, func(fake.Event) error { return c.hook(p) })
			err := c.do(p.FS())
			var pe *fs.PathError
			var le *os.LinkError
			if !errors.Is(err, c.want) || !(errors.As(err, &pe) || errors.As(err, &le)) {
				t.Errorf("%v, want %v in a *fs.PathError or *os.LinkError", err, c.want)
			}
			if got, err := w.ReadFile(c.file); err != nil || string(got) != c.content {
				t.Errorf("%s after: %q, %v; want %q", c.file, got, err, c.content)
			}
			if w.OpenFiles() != 0 {
				t.Errorf("%d files left open", w.OpenFiles())
			}
		})
	}
}

// Every event tells the operation: its op and call, its paths, cleaned,
// whether it acts on an open file, the flags of an open (so a hook can
// tell a create from a look), who acts and the result.
func TestHookEvents(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	if err := w.WriteFile("/tmp/a", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []fake.Event
	w.After("", "", func(ev fake.Event) error {
		mu.Lock()
		defer mu.Unlock()
		events = append(events, ev)
		return nil
	})
	last := func() fake.Event {
		mu.Lock()
		defer mu.Unlock()
		return events[len(events)-1]
	}
	var f lockfs.File
	const excl = os.O_RDWR | os.O_CREATE | os.O_EXCL
	tests := []struct {
		name string
		do   func() error
		want fake.Event
	}{
		{"relative rename", func() error { return p.FS().Rename("tmp/a", "/tmp/../tmp/b") },
			fake.Event{Op: "rename", Call: "rename", Path: "/tmp/a", NewPath: "/tmp/b", PID: p.PID()}},
		{"link", func() error { return p.FS().Link("/tmp/b", "/tmp/c") },
			fake.Event{Op: "link", Call: "link", Path: "/tmp/b", NewPath: "/tmp/c", PID: p.PID()}},
		{"failed stat", func() error { _, err := p.FS().Lstat("/tmp/none"); return err },
			fake.Event{Op: "stat", Call: "lstat", Path: "/tmp/none", PID: p.PID(), Err: fs.ErrNotExist}},
		{"world's lstat", func() error { _, err := w.FS().Lstat("/tmp/b"); return err },
			fake.Event{Op: "stat", Call: "lstat", Path: "/tmp/b"}},
		{"create", func() (err error) { f, err = p.FS().OpenFile("/tmp/f", excl, 0o644); return err },
			fake.Event{Op: "open", Call: "open", Path: "/tmp/f", Flag: excl, PID: p.PID()}},
		{"close", func() error { return f.Close() },
			fake.Event{Op: "close", Call: "close", Path: "/tmp/f", Handle: true, PID: p.PID()}},
		{"open no follow", func() (err error) { f, err = p.FS().OpenNoFollow("/tmp/f"); return err },
			fake.Event{Op: "open", Call: "open", Path: "/tmp/f", PID: p.PID()}},
		{"read", func() error { _, err := f.Read(make([]byte, 1)); return err },
			fake.Event{Op: "read", Call: "read", Path: "/tmp/f", Handle: true, PID: p.PID(), Err: io.EOF}},
		{"fileid", func() error { _, err := p.FS().FileID("/tmp/f"); return err },
			fake.Event{Op: "stat", Call: "fileid", Path: "/tmp/f", PID: p.PID()}},
	}
	for _, tt := range tests {
		err := tt.do()
		if !errors.Is(err, tt.want.Err) {
			t.Fatalf("%s: %v, want %v", tt.name, err, tt.want.Err)
		}
		ev, want := last(), tt.want
		if !errors.Is(ev.Err, want.Err) {
			t.Errorf("%s: event error %v, want %v", tt.name, ev.Err, want.Err)
		}
		if ev.Err, want.Err = nil, nil; !reflect.DeepEqual(ev, want) {
			t.Errorf("%s: event %+v, want %+v", tt.name, ev, want)
		}
	}
	f.Close()
}

// Hooks come and go while other goroutines use the filesystem; once
// removed, a hook is not called by operations that start later.
func TestHooksChangeConcurrentlyWithOperations(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	var calls atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				p.FS().Lstat("/tmp")
				runtime.Gosched() // wasm has one thread and no preemption
			}
		}()
	}
	for range 50 {
		called := make(chan struct{})
		var once sync.Once
		remove := w.Before("stat", "/tmp", func(fake.Event) error {
			calls.Add(1)
			once.Do(func() { close(called) })
			return nil
		})
		<-called
		remove()
	}
	close(stop)
	wg.Wait()
	before := calls.Load()
	for range 10 {
		p.FS().Lstat("/tmp")
	}
	if calls.Load() != before || before < 50 {
		t.Errorf("hook calls: %d while registered, %d after removal", before, calls.Load()-before)
	}
}
