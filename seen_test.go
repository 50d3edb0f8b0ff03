package proclock_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/fake"
)

// A file waiter whose earlier attempt found the lock held looks before it
// creates (stamplock.Acquire with seen): the create of its stamp, made while the
// holder's file is there, would fail, having made and removed a temporary
// file. So a waiter that looked three times, its holder killed before the
// third look, created its stamp's temporary file once, in its first
// attempt, and took the lock by converting the dead holder's stamp. (On
// the code before, each attempt created one: three.)
func TestFileWaiterLooksBeforeItCreates(t *testing.T) {
	w := fake.New()
	hp, wp := w.Spawn(), w.Spawn()
	const path = "/tmp/app.lock"
	if _, err := proclock.Acquire(context.Background(), hp.Platform().WithoutSQLite(), path, proclock.Options{}); err != nil {
		t.Fatal(err)
	}
	var creates, looks atomic.Int64
	defer w.Before("open", "", func(ev fake.Event) error {
		switch {
		case ev.PID != wp.PID():
		case ev.Flag&os.O_EXCL != 0 && strings.HasPrefix(filepath.Base(ev.Path), "app.lock.new-"):
			creates.Add(1)
		case ev.Flag == 0 && ev.Path == path:
			if looks.Add(1) == 3 {
				hp.Kill()
			}
		}
		return nil
	})()
	l, err := proclock.Acquire(context.Background(), wp.Platform().WithoutSQLite(), path, proclock.Options{Wait: true})
	if err != nil {
		t.Fatalf("the waiter after its holder's death: %v", err)
	}
	defer l.Release()
	if n := looks.Load(); n < 3 {
		t.Fatalf("the waiter looked at the lock file %d times; want 3 or more (the holder killed before the third)", n)
	}
	if n := creates.Load(); n != 1 {
		t.Errorf("the waiter created its stamp's temporary file %d times in %d looks; want once, in its first attempt", n, looks.Load())
	}
}
