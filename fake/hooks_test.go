package fake_test

import (
	"errors"
	"io/fs"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/lockfs"
)

// A holder stalled between two steps (create, then write) while another
// process acts: the other sees the empty file it left.
func TestHookStallsAProcessBetweenTwoSteps(t *testing.T) {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	const lock = "/tmp/app.lock"
	stalled, release := make(chan struct{}), make(chan struct{})
	w.Hook(fake.OpOpen, lock, fake.After, func(ev fake.Event) error {
		if ev.PID == a.PID() {
			close(stalled)
			<-release
		}
		return nil
	})

	done := make(chan error, 1)
	go func() {
		f, err := a.FS().OpenFile(lock, lockfs.CreateExcl, 0o644)
		if err != nil {
			done <- err
			return
		}
		_, err = f.Write([]byte("a"))
		done <- errors.Join(err, f.Close())
	}()

	<-stalled
	if _, err := b.FS().OpenFile(lock, lockfs.CreateExcl, 0o644); !errors.Is(err, fs.ErrExist) {
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
	w.Hook(fake.OpOpen, lock, fake.After, func(ev fake.Event) error {
		if ev.PID == p.PID() && ev.Err == nil {
			p.Kill()
		}
		return nil
	})
	f, err := p.FS().OpenFile(lock, lockfs.CreateExcl, 0o644)
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
	remove := w.Hook(fake.OpOpen, lock, fake.Before, func(fake.Event) error { return syscall.EACCES })

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
	if err := w.Mkdir("/tmp/ro", 0o555); err != nil {
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
		{"create in a read-only directory", func(fsys lockfs.FS) error {
			_, err := fsys.OpenFile("/tmp/ro/x", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666)
			return err
		}},
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

func TestBeforeHookErrorDoesNothing(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	if err := w.WriteFile("/tmp/a", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	refused := errors.New("staged failure")
	w.Hook(fake.OpRename, "/tmp/b", fake.Before, func(fake.Event) error { return refused })
	w.Hook(fake.OpRemove, "/tmp/a", fake.Before, func(fake.Event) error { return refused })

	var le *os.LinkError
	if err := p.FS().Rename("/tmp/a", "/tmp/b"); !errors.Is(err, refused) || !errors.As(err, &le) {
		t.Errorf("Rename matched by its new name: %v, want the hook's error in a *os.LinkError", err)
	}
	if err := p.FS().Remove("/tmp/a"); !errors.Is(err, refused) {
		t.Errorf("Remove: %v, want the hook's error", err)
	}
	if _, err := w.Stat("/tmp/a"); err != nil {
		t.Errorf("a refused operation changed the filesystem: %v", err)
	}
}

func TestAfterHookErrorReplacesTheResult(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	w.Hook(fake.OpOpen, "/tmp/a", fake.After, func(fake.Event) error { return syscall.EIO })
	if _, err := p.FS().OpenFile("/tmp/a", os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o666); !errors.Is(err, syscall.EIO) {
		t.Errorf("Create with a failing After hook: %v, want EIO", err)
	}
	if _, err := w.Stat("/tmp/a"); err != nil {
		t.Errorf("the file the failed Create made is missing: %v", err)
	}
	if w.OpenFiles() != 0 {
		t.Errorf("an open reported failed left %d files open", w.OpenFiles())
	}
}

func TestHookKillingBeforeStopsTheOperation(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	if err := w.WriteFile("/tmp/d", nil, 0o644); err != nil {
		t.Fatal(err)
	}
	w.Hook(fake.OpRemove, "/tmp/d", fake.Before, func(fake.Event) error { p.Kill(); return nil })
	if err := p.FS().Remove("/tmp/d"); !errors.Is(err, fake.ErrKilled) {
		t.Errorf("Remove by a process killed just before: %v, want ErrKilled", err)
	}
	if _, err := w.Stat("/tmp/d"); err != nil {
		t.Errorf("a process killed before Remove removed the file: %v", err)
	}
}

func TestHookEvents(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	if err := w.WriteFile("/tmp/a", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var events []fake.Event
	w.Hook(fake.OpAny, "", fake.After, func(ev fake.Event) error {
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

	tests := []struct {
		name    string
		do      func() error
		op      fake.Op
		path    string
		newPath string
		pid     int
		err     error
	}{
		{"relative rename", func() error { return p.FS().Rename("tmp/a", "/tmp/../tmp/b") }, fake.OpRename, "/tmp/a", "/tmp/b", p.PID(), nil},
		{"link", func() error { return p.FS().Link("/tmp/b", "/tmp/c") }, fake.OpLink, "/tmp/b", "/tmp/c", p.PID(), nil},
		{"failed stat", func() error { _, err := p.FS().Lstat("/tmp/none"); return err }, fake.OpStat, "/tmp/none", "", p.PID(), fs.ErrNotExist},
		{"world's lstat", func() error { _, err := w.FS().Lstat("/tmp/b"); return err }, fake.OpStat, "/tmp/b", "", 0, nil},
		{"read", func() error { _, err := readFile(p.FS(), "/tmp/c"); return err }, fake.OpClose, "/tmp/c", "", p.PID(), nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.do()
			if !errors.Is(err, tt.err) {
				t.Fatalf("operation: %v, want %v", err, tt.err)
			}
			ev := last()
			if ev.Op != tt.op || ev.Path != tt.path || ev.NewPath != tt.newPath || ev.PID != tt.pid || ev.When != fake.After || !errors.Is(ev.Err, tt.err) {
				t.Errorf("event %+v, want op %s path %s new path %q pid %d err %v", ev, tt.op, tt.path, tt.newPath, tt.pid, tt.err)
			}
		})
	}
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
		remove := w.Hook(fake.OpStat, "/tmp", fake.Before, func(fake.Event) error {
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

// An open's event carries its flags, so a hook can tell a create from a
// look; other operations carry none. Every event names its call, and says
// whether it acts on an open file or on a name.
func TestHookEventFlags(t *testing.T) {
	w := fake.New()
	p := w.Spawn()
	var mu sync.Mutex
	flags := map[fake.Op][]int{}
	var events []fake.Event
	w.Hook(fake.OpAny, "/tmp/f", fake.Before, func(ev fake.Event) error {
		mu.Lock()
		defer mu.Unlock()
		flags[ev.Op] = append(flags[ev.Op], ev.Flag)
		events = append(events, ev)
		return nil
	})
	f, err := p.FS().OpenFile("/tmp/f", os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	g, err := p.FS().OpenNoFollow("/tmp/f")
	if err != nil {
		t.Fatal(err)
	}
	g.Close()
	if _, err := p.FS().FileID("/tmp/f"); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	for _, ev := range events {
		byHandle := ev.Op == fake.OpClose
		if ev.Handle != byHandle || ev.Call == "" {
			t.Errorf("event %+v: want Handle %v and a call", ev, byHandle)
		}
	}
	if last := events[len(events)-1]; last.Call != "fileid" {
		t.Errorf("FileID's event calls %q; want fileid", last.Call)
	}
	want := []int{os.O_RDWR | os.O_CREATE | os.O_EXCL, 0}
	if got := flags[fake.OpOpen]; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("open flags %v; want %v", got, want)
	}
	for _, fl := range flags[fake.OpClose] {
		if fl != 0 {
			t.Errorf("close carries flags %#x; want none", fl)
		}
	}
}
