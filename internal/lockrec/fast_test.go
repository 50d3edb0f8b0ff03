package lockrec

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"

	"github.com/proclock/proclock/platform"
)

// sample is a record as a holder on Linux writes it.
func sample() Record {
	return Record{Format: Format, Identity: platform.Identity{
		Host: "build-7", BootID: "14494a81-e189-45c1-812b-750d6cc2cbbf", PID: 20065,
		StartTime: 1003912, PIDNamespace: 4026531836, TimeNamespace: 4026532177, BootOffset: -1005000000, LauncherPID: 77,
	}, AcquiredAt: time.Date(2026, 12, 1, 11, 36, 54, 406904108, time.UTC), Nonce: "IECPBYQY35H7GKXU3WIYBHPIVD", LockDev: 2049, LockIno: 99}
}

// TestFastPathsTaken: the records proclock writes go the fast way both
// ways, and come back as they were.
func TestFastPathsTaken(t *testing.T) {
	offset := sample()
	offset.BootOffset = 100000e9
	for _, r := range []Record{sample(), offset, {Format: Format, Nonce: "n"}, {Format: Format, Identity: platform.Identity{PID: 1}}} {
		b, ok := appendFast(nil, r)
		if !ok {
			t.Fatalf("appendFast(%+v) gave up", r)
		}
		want, _ := json.Marshal(r)
		if !bytes.Equal(b, want) {
			t.Fatalf("appendFast = %s; encoding/json writes %s", b, want)
		}
		got, ok := parseFast(append(b, '\n'))
		if !ok || !reflect.DeepEqual(got, r) {
			t.Fatalf("parseFast(%s) = %+v, %v; want %+v", b, got, ok, r)
		}
	}
	for _, data := range []string{
		`{"format":"proclock/1","pid":5,"pid":6}`,                       // a key twice: encoding/json's call
		`{"format":"proclock/1","PID":5}`,                               // another case: encoding/json matches it
		`{"format":"proclock/1","host":"a\u0062"}`,                      // an escape
		`{"format":"proclock/1","pid":05}`,                              // not JSON
		`{"format":"proclock/1","acquiredAt":"2026-01-01T00:00:00.0Z"}`, // not canonical
		`{"format":"proclock/1","pid":5} x`,
		`{"format":"proclock/1","extra":1}`,
		`{"format":"proclock/1","bootOffset":-0}`,                   // not canonical
		`{"format":"proclock/1","bootOffset":-9223372036854775809}`, // out of range: encoding/json's error
		`{"format":"proclock/1","bootOffset":9223372036854775808}`,
	} {
		if r, ok := parseFast([]byte(data)); ok {
			t.Errorf("parseFast(%s) = %+v; want it left to encoding/json", data, r)
		}
	}
}

// FuzzFastRecord: what parseFast reads, encoding/json reads the same; what
// appendFast writes, encoding/json writes byte for byte.
func FuzzFastRecord(f *testing.F) {
	s := sample()
	b, _ := json.Marshal(s)
	f.Add(b, s.Host, s.BootID, s.Nonce, s.PID, s.StartTime, s.LauncherPID, s.AcquiredAt.UnixNano(), s.LockIno, s.BootOffset)
	f.Add([]byte(`{"format":"proclock/1","pid":1,"bootOffset":-9223372036854775808}`), "h<", "", "n\"", -1, uint64(0), 0, int64(-1), uint64(1), int64(math.MinInt64))
	f.Fuzz(func(t *testing.T, data []byte, host, boot, nonce string, pid int, start uint64, launcher int, at int64, ino uint64, offset int64) {
		if r, ok := parseFast(data); ok {
			var want Record
			if err := json.Unmarshal(data, &want); err != nil || !reflect.DeepEqual(r, want) {
				t.Fatalf("parseFast(%q) = %+v; encoding/json: %+v, %v", data, r, want, err)
			}
		}
		r := Record{Format: Format, Identity: platform.Identity{Host: host, BootID: boot, PID: pid, StartTime: start, BootOffset: offset, LauncherPID: launcher},
			AcquiredAt: time.Unix(0, at).UTC(), Nonce: nonce, LockIno: ino}
		if got, ok := appendFast(nil, r); ok {
			want, err := json.Marshal(r)
			if err != nil || !bytes.Equal(got, want) {
				t.Fatalf("appendFast(%+v) = %s; encoding/json: %s, %v", r, got, want, err)
			}
		}
	})
}

// BenchmarkRecord: a stamp written and read, the fast way and
// encoding/json's.
func BenchmarkRecord(b *testing.B) {
	r := sample()
	data := r.Marshal()
	b.Run("marshal/fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r.Marshal()
		}
	})
	b.Run("marshal/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			json.Marshal(r)
		}
	})
	b.Run("parse/fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			Parse(data)
		}
	})
	b.Run("parse/json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Record
			json.Unmarshal(data, &r)
		}
	})
}
