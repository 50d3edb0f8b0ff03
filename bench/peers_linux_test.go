package bench

import (
	"context"
	"path/filepath"
	"testing"
)

// acquireKinds are the locks whose Acquire+Release is measured: proclock
// on both mechanisms, the raw kernel and file paths, and the peers.
var acquireKinds = []string{kindSQLite, kindFile, kindFlock, kindOFD, kindExcl, kindGofrs, kindLockedfile, kindNightlyone}

// BenchmarkAcquireRelease: one uncontended acquisition and release, as a
// process that takes the lock once does it: each lock opens its file anew.
// raw flock and OFD are open + lock + close; raw excl is O_EXCL create +
// write + close + unlink.
func BenchmarkAcquireRelease(b *testing.B) {
	ctx := context.Background()
	for _, kind := range acquireKinds {
		b.Run(kind, func(b *testing.B) {
			path := filepath.Join(b.TempDir(), "bench.lock")
			b.ReportAllocs()
			for b.Loop() {
				release, err := take(ctx, kind, path, false)
				if err != nil {
					b.Fatal(err)
				}
				if err := release(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// probeKinds are the locks that can be asked whether they are held
// (go-internal's lockedfile cannot). flock and gofrs try to take the lock
// and let go at once; ofd asks F_OFD_GETLK; excl reads the lock file;
// nightlyone reads the pid and signals it.
var probeKinds = []string{kindSQLite, kindFile, kindFlock, kindOFD, kindExcl, kindGofrs, kindNightlyone}

// BenchmarkIsHeld: asking whether a lock is held, when it is free and when
// a live process (a helper) holds it. A free SQLite lock has its file (it
// stays after Release); a free lock file of the other kinds is absent,
// except flock's and OFD's, whose file stays.
func BenchmarkIsHeld(b *testing.B) {
	ctx := context.Background()
	for _, kind := range probeKinds {
		for _, held := range []bool{false, true} {
			name := kind + "/free"
			if held {
				name = kind + "/held"
			}
			b.Run(name, func(b *testing.B) {
				path := filepath.Join(b.TempDir(), "bench.lock")
				// Once taken and released: the file a free lock leaves.
				release, err := take(ctx, holderKind(kind), path, false)
				if err != nil {
					b.Fatal(err)
				}
				if err := release(); err != nil {
					b.Fatal(err)
				}
				if held {
					holding(b, holderKind(kind), path)
				}
				b.ReportAllocs()
				for b.Loop() {
					got, err := probe(ctx, kind, path)
					if err != nil || got != held {
						b.Fatalf("probe = %v, %v; want %v", got, err, held)
					}
				}
			})
		}
	}
}

// holderKind is what holds a lock for kind's probe.
func holderKind(kind string) string {
	if kind == kindGofrs {
		return kindFlock // gofrs/flock is flock(2)
	}
	return kind
}
