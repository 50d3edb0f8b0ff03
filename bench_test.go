package proclock_test

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

func benchPlatform(mech proclock.Mechanism) *platform.Platform {
	p := platform.Native()
	if mech == proclock.MechanismFile {
		p.SQLite = nil
	}
	return p
}

func BenchmarkAcquireRelease(b *testing.B) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
		b.Run(string(mech), func(b *testing.B) {
			p := benchPlatform(mech)
			path := filepath.Join(b.TempDir(), "bench.lock")
			ctx := context.Background()
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
}
