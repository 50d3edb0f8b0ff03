package proclock

import (
	"context"
	"runtime"
	"testing"
	"time"

	"github.com/proclock/proclock/fake"
)

// TestLostHandOver: a lock handed over to the next acquisition of the
// process (turns.go) was released cleanly: its Lost is never closed, its
// watch ends; the lock handed on watches for itself, and is told of a
// loss after.
func TestLostHandOver(t *testing.T) {
	for _, file := range []bool{false, true} {
		w := fake.New()
		if err := w.Mkdir("/locks", 0o755); err != nil {
			t.Fatal(err)
		}
		p := w.Spawn().Platform()
		if file {
			p = p.WithoutSQLite()
		}
		const path = "/locks/app.lock"
		ctx := context.Background()
		l1, err := Acquire(ctx, p, path, Options{})
		if err != nil {
			t.Fatal(err)
		}
		lost1 := l1.Lost()
		tg, err := target(p, path)
		if err != nil {
			t.Fatal(err)
		}
		got := make(chan *Lock, 1)
		go func() {
			l2, err := Acquire(ctx, p, path, Options{Wait: true})
			if err != nil {
				t.Error(err)
			}
			got <- l2
		}()
		for turns.queued(tg.key) != 1 {
			runtime.Gosched()
		}
		if err := l1.Release(); err != nil {
			t.Fatal(err)
		}
		l2 := <-got
		if l2 == nil {
			t.FailNow()
		}
		if l2 == l1 || l2.check == nil {
			t.Fatalf("file %v: the handed-over lock has no look of its own", file)
		}
		if err := l2.Err(); err != nil {
			t.Fatalf("file %v: Err of the handed-over lock = %v", file, err)
		}
		if err := w.FS().Remove(path); err != nil {
			t.Fatal(err)
		}
		select {
		case <-l2.Lost():
		case <-time.After(10 * time.Second):
			t.Fatalf("file %v: the handed-over lock not told of its loss", file)
		}
		select {
		case <-lost1:
			t.Fatalf("file %v: the lock released by hand-over was told lost", file)
		default:
		}
		if l1.Err() != nil {
			t.Fatalf("file %v: Err of the lock released by hand-over = %v", file, l1.Err())
		}
		l2.Release()
	}
}
