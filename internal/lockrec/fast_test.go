package lockrec

import (
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

// TestFastPathsTaken: the records proclock writes are read the fast way,
// and come back as they were.
func TestFastPathsTaken(t *testing.T) {
	offset := sample()
	offset.BootOffset = 100000e9
	for _, r := range []Record{sample(), offset, {Format: Format, Nonce: "n"}, {Format: Format, Identity: platform.Identity{PID: 1}}} {
		b := r.Marshal()
		got, ok := parseFast(b)
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

// FuzzFastRecord: what parseFast reads, encoding/json reads the same, and
// what Marshal writes, parseFast reads.
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
		if plain(host) && plain(boot) && plain(nonce) && pid >= 0 && launcher >= 0 && r.AcquiredAt.Year() >= 0 && r.AcquiredAt.Year() <= 9999 {
			if got, ok := parseFast(r.Marshal()); !ok || !reflect.DeepEqual(got, r) {
				t.Fatalf("parseFast(Marshal(%+v)) = %+v, %v", r, got, ok)
			}
		}
	})
}

// BenchmarkParse: a stamp read, the fast way and encoding/json's.
func BenchmarkParse(b *testing.B) {
	data := sample().Marshal()
	b.Run("fast", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			parseFast(data)
		}
	})
	b.Run("json", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			var r Record
			json.Unmarshal(data, &r)
		}
	})
}

// plain reports whether encoding/json writes s as it is, between quotes,
// as parseFast reads it: printable ASCII without a quote, a backslash or
// an HTML character.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}
