package proclock_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/ncruces/go-sqlite3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/fsx"
	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/lockfs"
	"github.com/proclock/proclock/platform"
)

// Benchmarks run in os.TempDir(); set TMPDIR to compare filesystems (the
// figures in the issue notes give both a disk and tmpfs).

var mechanisms = []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile}

// nativePlatform is the native platform, locking with mech.
func nativePlatform(mech proclock.Mechanism) *platform.Platform {
	p := platform.Native()
	if mech == proclock.MechanismFile {
		p = p.WithoutSQLite()
	}
	return p
}

// BenchmarkAcquireRelease: one uncontended acquisition and release.
func BenchmarkAcquireRelease(b *testing.B) {
	for _, mech := range mechanisms {
		b.Run(string(mech), func(b *testing.B) { benchAcquireRelease(b, nativePlatform(mech)) })
	}
	// SQLite without the flock(2) lock beside its own (an FS without
	// fsx.Flocker): what exclusion with flock(1) costs.
	b.Run("sqlite-without-flock", func(b *testing.B) {
		p := nativePlatform(proclock.MechanismSQLite)
		p.FS = withRanges(&withoutFlock{p.FS}, p.FS)
		benchAcquireRelease(b, p)
	})
	// The floor of any lock file: create exclusively, write a stamp,
	// close, remove.
	b.Run("raw-excl-create", func(b *testing.B) {
		path := filepath.Join(b.TempDir(), "raw.lock")
		stamp := []byte(`{"format":"proclock/1","host":"benchhost","bootId":"0b7c6a2e-1f0e-4c1e-9f43-6f1d2e3a4b5c","pid":4242,"startTime":123456,"acquiredAt":"2026-01-01T00:00:00Z","nonce":"ABCDEFGHIJKLMNOPQRSTUVWXYZ"}` + "\n")
		b.ReportAllocs()
		for b.Loop() {
			f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
			if err != nil {
				b.Fatal(err)
			}
			if _, err := f.Write(stamp); err != nil {
				b.Fatal(err)
			}
			f.Close()
			if err := os.Remove(path); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// benchAcquireRelease times an uncontended Acquire and Release through p.
func benchAcquireRelease(b *testing.B, p *platform.Platform) {
	path := filepath.Join(b.TempDir(), "bench.lock")
	ctx := context.Background()
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
}

// withoutFlock is an FS with every power of the one it wraps but
// fsx.Flocker's (and the others not in lockfs.FS).
type withoutFlock struct{ lockfs.FS }

// BenchmarkIsHeld: a free lock, and one held by another holder (a SQLite
// connection outside proclock; a lock file stamped by pid 1, which lives).
func BenchmarkIsHeld(b *testing.B) {
	for _, mech := range mechanisms {
		for _, held := range []bool{false, true} {
			name := string(mech) + "/free"
			if held {
				name = string(mech) + "/held"
			}
			b.Run(name, func(b *testing.B) {
				p := nativePlatform(mech)
				path := filepath.Join(b.TempDir(), "bench.lock")
				ctx := context.Background()
				if mech == proclock.MechanismSQLite {
					// A free SQLite lock has its file.
					l, err := proclock.Acquire(ctx, p, path, proclock.Options{})
					if err != nil {
						b.Fatal(err)
					}
					l.Release()
				}
				if held {
					holdElsewhere(b, mech, path)
				}
				b.ReportAllocs()
				for b.Loop() {
					got, err := proclock.IsHeld(ctx, p, path)
					if err != nil || got != held {
						b.Fatalf("IsHeld = %v, %v; want %v", got, err, held)
					}
				}
			})
		}
	}
}

func holdElsewhere(b *testing.B, mech proclock.Mechanism, path string) {
	switch mech {
	case proclock.MechanismSQLite:
		conn, err := sqlite3.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { conn.Close() })
		if err := conn.Exec(`PRAGMA locking_mode=EXCLUSIVE; PRAGMA journal_mode=OFF; BEGIN EXCLUSIVE;`); err != nil {
			b.Fatal(err)
		}
	case proclock.MechanismFile:
		host, _ := os.Hostname()
		stamp := lockrec.Record{Format: lockrec.Format, Identity: platform.Identity{Host: host, PID: 1}, Nonce: "init"}
		f, err := lockfs.OS().OpenFile(path, fsx.CreateExcl, 0o644)
		if err != nil {
			b.Fatal(err)
		}
		f.Write(stamp.Marshal())
		f.Close()
	}
}
