package fake_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"syscall"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/fsx"
)

func ExampleNew() {
	w := fake.New()
	a, b := w.Spawn(), w.Spawn()
	_ = writeFile(a.Platform().FS, "/tmp/note", []byte("hello"), 0o644)
	got, _ := readFile(b.Platform().FS, "/tmp/note")
	fmt.Println(a.PID(), b.PID(), string(got), w.Now().Format(time.RFC3339))
	// Output: 100 101 hello 2026-01-01T00:00:00Z
}

func ExampleWorld_SpawnPID() {
	w := fake.New()
	old := w.Spawn()
	old.Kill()
	successor, _ := w.SpawnPID(old.PID())
	info, _ := successor.Platform().Process.Lookup(old.PID())
	fmt.Println(info.Exists, info.StartTime == old.Identity().StartTime)
	// Output: true false
}

func ExampleWorld_Before() {
	w := fake.New()
	p := w.Spawn()
	_ = w.WriteFile("/tmp/app.lock", []byte("stamp"), 0o644)
	remove := w.Before("open", "/tmp/app.lock", func(fake.Event) error {
		return syscall.EACCES
	})
	_, err := p.Platform().FS.OpenNoFollow("/tmp/app.lock")
	fmt.Println(errors.Is(err, fs.ErrPermission))
	remove()
	_, err = p.Platform().FS.OpenNoFollow("/tmp/app.lock")
	fmt.Println(err)
	// Output:
	// true
	// <nil>
}

func ExampleProcess_Kill() {
	w := fake.New()
	p := w.Spawn()
	// Crash between creating the lock file and writing it.
	w.After("open", "/tmp/app.lock", func(ev fake.Event) error {
		if ev.PID == p.PID() {
			p.Kill()
		}
		return nil
	})
	f, _ := p.Platform().FS.OpenFile("/tmp/app.lock", fsx.CreateExcl, 0o644)
	_, err := f.Write([]byte("stamp"))
	fi, _ := w.FS().Lstat("/tmp/app.lock")
	fmt.Println(errors.Is(err, fake.ErrKilled), fi.Size(), w.OpenFiles())
	// Output: true 0 0
}

func ExampleWorld_Freeze() {
	w := fake.New()
	start := w.Now()
	w.Freeze()
	done := make(chan error)
	go func() { done <- w.Spawn().Platform().Clock.Sleep(context.Background(), time.Minute) }()
	_ = w.WaitSleepers(context.Background(), 1) // the sleep is blocked now
	w.Advance(time.Minute)
	fmt.Println(<-done, w.Now().Sub(start))
	// Output: <nil> 1m0s
}

func ExampleWorld_NewPIDNamespace() {
	w := fake.New()
	inContainer := w.NewPIDNamespace().Spawn()
	onHost := w.Spawn()
	a, b := onHost.Identity(), inContainer.Identity()
	fmt.Println(a.PID == b.PID, a.Host == b.Host, a.PIDNamespace == b.PIDNamespace)
	// Output: true true false
}

func ExampleProcess_Platform() {
	w := fake.New()
	_ = w.Mkdir("/locks", 0o755)
	holder, waiter := w.Spawn(), w.Spawn()
	ctx := context.Background()
	held, err := proclock.Acquire(ctx, holder.Platform(), "/locks/app.lock", proclock.Options{})
	fmt.Println(err, held.Mechanism())
	_, err = proclock.Acquire(ctx, waiter.Platform(), "/locks/app.lock", proclock.Options{})
	fmt.Println(errors.Is(err, proclock.ErrHeld))
	holder.Kill() // the kernel drops its locks
	taken, err := proclock.Acquire(ctx, waiter.Platform(), "/locks/app.lock", proclock.Options{})
	fmt.Println(err)
	defer taken.Release()
	// Output:
	// <nil> sqlite
	// true
	// <nil>
}
