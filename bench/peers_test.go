package bench

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/gofrs/flock"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// BenchmarkAcquireRelease: one uncontended acquisition and release, by
// each lock.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
		b.Run("proclock-"+string(mech), func(b *testing.B) {
			p := platform.Native()
			if mech == proclock.MechanismFile {
				p.SQLite = nil
			}
			path := filepath.Join(b.TempDir(), "bench.lock")
			b.ReportAllocs()
			for b.Loop() {
				l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
				if err != nil {
					b.Fatal(err)
				}
				if err := l.Release(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("gofrs-flock", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "bench.lock")
		b.ReportAllocs()
		for b.Loop() {
			// A new Flock each time, as a process taking the lock once
			// would: it opens the file and flocks it.
			fl := flock.New(path)
			ok, err := fl.TryLock()
			if err != nil || !ok {
				b.Fatalf("TryLock = %v, %v", ok, err)
			}
			if err := fl.Unlock(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("raw-excl-create", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "bench.lock")
		stamp := []byte(`{"pid":4242,"host":"benchhost"}` + "\n")
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			f.Write(stamp)
			f.Close()
			if err := os.Remove(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkHeldCheck: asking whether a lock held by another holder is
// held. gofrs/flock can only try to take it.
func BenchmarkHeldCheck(b *testing.B) {
	ctx := context.Background()
	b.Run("proclock-sqlite-IsHeld", func(b *testing.B) {
		p := platform.Native()
		path := filepath.Join(b.TempDir(), "bench.lock")
		other := *p
		other.SQLite = &distinctSQLite{p.SQLite} // another process, as turns see it
		l, err := proclock.Acquire(ctx, &other, path, proclock.Options{})
		if err != nil {
			b.Fatal(err)
		}
		defer l.Release()
		b.ReportAllocs()
		for b.Loop() {
			if held, err := proclock.IsHeld(ctx, p, path); err != nil || !held {
				b.Fatalf("IsHeld = %v, %v", held, err)
			}
		}
	})
	b.Run("gofrs-flock-TryLock", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "bench.lock")
		holder := flock.New(path)
		if ok, err := holder.TryLock(); err != nil || !ok {
			b.Fatalf("TryLock = %v, %v", ok, err)
		}
		defer holder.Unlock()
		b.ReportAllocs()
		for b.Loop() {
			fl := flock.New(path)
			if ok, err := fl.TryLock(); err != nil || ok {
				b.Fatalf("TryLock on a held lock = %v, %v", ok, err)
			}
			fl.Close()
		}
	})
}

type distinctSQLite struct{ platform.SQLite }
