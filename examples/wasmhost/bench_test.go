package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// The figures of docs/wasm.md: run with a fixed count, since every
// iteration of the benchmark's own loop starts processes:
//
//	go test -run '^$' -bench . -benchtime 200x
//
// ns/acquire is what one uncontended Acquire+Release costs inside the
// agent; ns/handoff-to-X is how long after a holder's Release the waiting
// agent X holds the lock (median of the handoffs X received).

func BenchmarkAcquire(b *testing.B) {
	for _, k := range []kind{nativeKind("auto"), nativeKind("file"), wasip1Kind, jsKind} {
		b.Run(k.name, func(b *testing.B) {
			ctx, dir := testContext(b), b.TempDir()
			a := start(b, k, dir, "-acquire", strconv.Itoa(b.N), filepath.Join(dir, "x.lock"))
			b.ReportMetric(duration(b, a.expect(ctx, "acquire")["per_op"]), "ns/acquire")
		})
	}
}

// BenchmarkHandoff hands the lock between a native agent (SQLite, the
// default, or the file mechanism) and another agent, b.N times in all, each holder keeping it 5 ms after
// the other started waiting.
func BenchmarkHandoff(b *testing.B) {
	for _, native := range []kind{nativeKind("auto"), nativeKind("file")} {
		for _, other := range []kind{native, wasip1Kind, jsKind} {
			benchmarkHandoff(b, native, other)
		}
	}
}

func benchmarkHandoff(b *testing.B, native, other kind) {
	{
		b.Run(native.name+"/"+other.name, func(b *testing.B) {
			ctx, dir := testContext(b), b.TempDir()
			path, rounds := filepath.Join(dir, "x.lock"), strconv.Itoa(max(b.N, 2))
			n := start(b, native, dir, "-handoff", rounds, "-role", "0", "-dir", dir, path)
			n.expect(ctx, "holding")
			o := start(b, other, dir, "-handoff", rounds, "-role", "1", "-dir", dir, path)
			b.ReportMetric(duration(b, n.expect(ctx, "handoff")["median"]), "ns/handoff-to-native")
			b.ReportMetric(duration(b, o.expect(ctx, "handoff")["median"]), "ns/handoff-to-"+other.name)
		})
	}
}

func duration(b *testing.B, s string) float64 {
	b.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		b.Fatalf("agent reported %q: %v", s, err)
	}
	return float64(d.Nanoseconds())
}

// BenchmarkStart times a wasip1 guest's start under wasmhost with -cache,
// from the process's start to its exit, the guest taking and releasing a
// free lock (ns/op). The first start, which fills the cache (wazero
// compiles the guest), is timed alone (ns/first-start), once; MB/guest is
// the guest's size.
func BenchmarkStart(b *testing.B) {
	guest := filepath.Join(bin.dir, "guest.wasm")
	if bin.err != nil {
		b.Fatal(bin.err)
	}
	fi, err := os.Stat(guest)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	run := func() {
		out, err := exec.Command(filepath.Join(bin.dir, "wasmhost"), "-cache", filepath.Join(dir, "cache"), guest, dir, filepath.Join(dir, "x.lock")).CombinedOutput()
		if err != nil {
			b.Fatalf("wasmhost: %v\n%s", err, out)
		}
	}
	began := time.Now()
	run()
	first := time.Since(began)
	for b.Loop() {
		run()
	}
	b.ReportMetric(float64(first.Nanoseconds()), "ns/first-start")
	b.ReportMetric(float64(fi.Size())/1e6, "MB/guest")
}
