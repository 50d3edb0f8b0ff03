package lockrec_test

import (
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// TestClassify: the line between a lock file and anything else, on both
// sides (docs/protocol.md, "What the lock file may be").
func TestClassify(t *testing.T) {
	stamp := lockrec.Record{Identity: platform.Identity{Host: "h", PID: 42}, AcquiredAt: time.Unix(1, 0).UTC(), Nonce: "n"}.Marshal()
	db := lockrec.EmptyDatabase()
	withTables := append(append([]byte{}, db...), make([]byte, 512)...)
	for _, tc := range []struct {
		name string
		data string
		want lockrec.Kind
	}{
		{"empty", "", lockrec.Empty},
		{"the empty database", string(db), lockrec.SQLite},
		{"the empty database cut short", string(db[:40]), lockrec.Torn},
		{"a database with tables", string(withTables), lockrec.Foreign},
		{"a one-page database of someone's (a WAL database's tables can all be in -wal)", string(db[:100]) + strings.Repeat("\x01", 412), lockrec.Foreign},
		{"text that starts as the magic does", "SQLite", lockrec.Foreign},
		{"one letter", "S", lockrec.Foreign},
		{"our stamp", string(stamp), lockrec.Stamp},
		{"another tool's stamp", `{"pid":12,"lockId":"x"}`, lockrec.Stamp},
		{"the seed's mark", `{"host":"h","pid":5,"acquiredAt":1767225600000,"nonce":"n"}`, lockrec.Stamp},
		{"a legacy pid", "4242\n", lockrec.Stamp},
		{"our stamp cut in a string", string(stamp[:30]), lockrec.Torn},
		{"our stamp cut after a comma", `{"format":"proclock/1",`, lockrec.Torn},
		{"our stamp's first bytes", `{"fo`, lockrec.Torn},
		{"one brace", "{", lockrec.Torn},
		{"brace then garbage", "{garbage", lockrec.Foreign},
		{"our marker then garbage", `{"format":"proclock/1",garbage`, lockrec.Foreign},
		{"another tool's cut record", `{"pid":12,"lockId":"ab`, lockrec.Foreign},
		{"json without pid", `{"name":"x"}`, lockrec.Foreign},
		{"our record without pid (a mark of nobody)", `{"format":"proclock/1","nonce":"x"}`, lockrec.Foreign},
		{"a script", "#!/bin/sh\necho hi\n", lockrec.Foreign},
		{"whitespace", " \n", lockrec.Foreign},
		{"binary", "\x00\xff", lockrec.Foreign},
		{"our stamp twice", string(stamp) + string(stamp), lockrec.Foreign},
	} {
		if got := lockrec.Classify([]byte(tc.data)); got != tc.want {
			t.Errorf("%s: Classify(%.40q) = %v; want %v", tc.name, tc.data, got, tc.want)
		}
	}
}

// TestMarshalNeverDatabaseSize: whatever its fields, a record is never as
// long as the empty database, so that a size tells them apart.
func TestMarshalNeverDatabaseSize(t *testing.T) {
	hits := 0
	for n := range 600 {
		r := lockrec.Record{Identity: platform.Identity{Host: strings.Repeat("h", n), PID: 1}, Nonce: "n"}
		b := r.Marshal()
		if len(b) == lockrec.DatabaseSize {
			t.Fatalf("a record of %d bytes: %q", len(b), b)
		}
		if len(b) == lockrec.DatabaseSize+1 {
			hits++
		}
		if got, err := lockrec.Parse(b); err != nil || got.Host != r.Host {
			t.Fatalf("the padded record does not parse back: %v", err)
		}
	}
	if hits == 0 {
		t.Fatal("no host length reached the database's size: the test proves nothing")
	}
}

// TestForeignAcquiredAt: another tool's acquiredAt is read as RFC 3339 or
// epoch milliseconds, and anything else leaves it unknown.
func TestForeignAcquiredAt(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want time.Time
	}{
		{`{"pid":5,"acquiredAt":1767225600000}`, time.UnixMilli(1767225600000)},
		{`{"pid":5,"acquiredAt":"2026-01-01T00:00:00Z"}`, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{`{"pid":5,"acquiredAt":"yesterday"}`, time.Time{}},
		{`{"pid":5,"acquiredAt":true}`, time.Time{}},
	} {
		r, err := lockrec.Parse([]byte(tc.in))
		if err != nil || !r.Foreign || !r.AcquiredAt.Equal(tc.want) {
			t.Errorf("Parse(%s) = %+v, %v; want a foreign record acquired at %v", tc.in, r, err, tc.want)
		}
	}
}
