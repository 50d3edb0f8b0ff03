package lockrec_test

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// TestParseHolder: a record with a positive pid, ours or another tool's
// (judged on host, boot id and pid only), names a holder; anything else,
// however close, is nil (the holder is unknown).
func TestParseHolder(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   string
		want *platform.Identity // nil: not a record
	}{
		{"ours", `{"format":"proclock/1","host":"h","bootId":"b","pid":42,"startTime":7,"pidNamespace":9,"launcherPid":3,"acquiredAt":"2026-01-02T03:04:05Z"}`,
			&platform.Identity{Host: "h", BootID: "b", PID: 42, StartTime: 7, PIDNamespace: 9, LauncherPID: 3}},
		{"ours, trailing newline", "{\"format\":\"proclock/1\",\"pid\":5}\n", &platform.Identity{PID: 5}},
		// Other tools' records are judged on what they say for certain.
		{"no format", `{"pid":5}`, &platform.Identity{PID: 5}},
		{"another format", `{"format":"proclock/2","pid":5,"startTime":99}`, &platform.Identity{PID: 5}},
		{"the seed's record", `{"host":"h","pid":5,"acquiredAt":1767225600000,"nonce":"n"}`, &platform.Identity{Host: "h", PID: 5}},
		{"the seed's older record", `{"host":"h","bootId":"b","pid":5,"startTime":"Mon 12:00","acquiredAt":"2026-01-01T00:00:00Z","nonce":"n"}`,
			&platform.Identity{Host: "h", BootID: "b", PID: 5}},
		{"a mark of an unknown holder", `{"format":"proclock/1","acquiredAt":"2026-01-02T03:04:05Z","nonce":"x"}`, nil},
		{"pid as string", `{"format":"proclock/1","pid":"12"}`, nil},
		{"pid zero", `{"format":"proclock/1","pid":0}`, nil},
		{"pid negative", `{"format":"proclock/1","pid":-1}`, nil},
		{"pid fraction", `{"format":"proclock/1","pid":1.5}`, nil},
		{"pid 2^63", `{"format":"proclock/1","pid":9223372036854775808}`, nil},
		{"bad time", `{"format":"proclock/1","pid":5,"acquiredAt":12}`, nil},
		{"byte order mark", "\ufeff" + `{"format":"proclock/1","pid":5}`, nil},
		{"trailing garbage", `{"format":"proclock/1","pid":5}xyz`, nil},
		{"legacy bare pid", "4242\n", &platform.Identity{PID: 4242}},
		{"null", "null", nil},
		{"array", `[{"format":"proclock/1","pid":5}]`, nil},
		{"empty", "", nil},
		{"binary", "\x00\xff\xfe", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := parseHolder([]byte(tc.in))
			switch {
			case tc.want == nil && got != nil:
				t.Fatalf("ParseHolder(%q) = %+v; want nil", tc.in, got)
			case tc.want != nil && got == nil:
				t.Fatalf("ParseHolder(%q) = nil; want %+v", tc.in, *tc.want)
			case tc.want != nil && got.Identity != *tc.want:
				t.Fatalf("ParseHolder(%q) = %+v; want %+v", tc.in, got.Identity, *tc.want)
			}
		})
	}
}

// FuzzParseHolder: any bytes give a record or nil without panicking; a
// record names a positive pid, carries proclock's format, and survives a
// round trip through JSON unchanged.
func FuzzParseHolder(f *testing.F) {
	rec := lockrec.Record{Format: "proclock/1", Identity: platform.Identity{Host: "h", BootID: "b", PID: 42, StartTime: 7, PIDNamespace: 9, LauncherPID: 3}, AcquiredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)}
	ours, err := json.Marshal(rec)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range []string{
		string(ours), `{"format":"proclock/1","pid":5}`, `{"FORMAT":"proclock/1","PID":5}`,
		`{"format":"proclock/1","pid":5,"pid":-5}`, `{"format":"proclock/1","pid":"12"}`, `{"format":"proclock/1","pid":1.5}`,
		`{"format":"proclock/1","pid":9223372036854775807,"startTime":18446744073709551615}`,
		`{"format":"proclock/1","pid":5,"acquiredAt":"0000-01-01T00:00:00+23:59"}`,
		"\ufeff{}", `{"format":"proclock/1","pid":5}xx`, "4242", "null", strings.Repeat("[", 100), "\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		r := parseHolder(data)
		if r == nil {
			return
		}
		if r.PID <= 0 {
			t.Fatalf("ParseHolder(%q) = %+v: a record without a positive pid", data, r)
		}
		if r.Foreign && (r.StartTime != 0 || r.PIDNamespace != 0 || r.LauncherPID != 0) {
			t.Fatalf("ParseHolder(%q) = %+v: trusted another tool's start time, namespace or launcher", data, r)
		}
		back := parseHolder(r.Marshal())
		if back == nil || back.Identity != r.Identity || !back.AcquiredAt.Equal(r.AcquiredAt) {
			t.Fatalf("round trip of %+v (from %q) gave %+v", r, data, back)
		}
	})
}

// parseHolder is what a reader makes of a .holder file's bytes, ours or
// another tool's: the record, or nil when they name no holder.
func parseHolder(data []byte) *lockrec.Record {
	r, err := lockrec.Parse(data)
	if err != nil || !r.Known() {
		return nil
	}
	return &r
}
