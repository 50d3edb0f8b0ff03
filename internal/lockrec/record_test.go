package lockrec_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

func TestParse(t *testing.T) {
	ours := lockrec.Record{
		Format:     lockrec.Format,
		Identity:   platform.Identity{Host: "h", BootID: "b", PID: 42, StartTime: 7, PIDNamespace: 9, LauncherPID: 3},
		AcquiredAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC),
		Nonce:      "n",
	}
	for _, tc := range []struct {
		name string
		in   string
		want *platform.Identity // nil: not a stamp
	}{
		{"ours", string(ours.Marshal()), &ours.Identity},
		{"legacy pid", "4242", &platform.Identity{PID: 4242}},
		{"legacy pid with whitespace", " \t4242\n", &platform.Identity{PID: 4242}},
		{"foreign json keeps host, boot, pid only", `{"host":"h","bootId":"b","pid":5,"startTime":"12:00","launcherPid":9,"lockId":"x"}`,
			&platform.Identity{Host: "h", BootID: "b", PID: 5}},
		{"foreign format marker", `{"format":"other/2","pid":5,"startTime":99}`, &platform.Identity{PID: 5}},
		{"other host, valid", `{"format":"proclock/1","host":"far","pid":8,"acquiredAt":"2026-01-01T00:00:00Z","nonce":"x"}`,
			&platform.Identity{Host: "far", PID: 8}},
		{"empty", "", nil},
		{"whitespace", " \n", nil},
		{"pid as string", `{"pid":"12"}`, nil},
		{"pid zero", `{"pid":0}`, nil},
		{"pid negative", `{"pid":-1}`, nil},
		{"pid fraction", `{"pid":1.5}`, nil},
		{"pid 2^63", `{"pid":9223372036854775808}`, nil},
		{"legacy pid 2^63", "9223372036854775808", nil},
		{"legacy pid zero", "0", nil},
		{"byte order mark", "\ufeff" + `{"pid":5}`, nil},
		{"trailing garbage", `{"pid":5}xyz`, nil},
		{"two objects", `{"pid":5}{"pid":6}`, nil},
		{"array", `[5]`, nil},
		{"null", `null`, nil},
		{"binary", "\x00\x01\xfe\xff", nil},
		{"truncated", `{"format":"proclock/1","pid":5`, nil},
		{"ours with a bad time", `{"format":"proclock/1","pid":5,"acquiredAt":12}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := parseStamp([]byte(tc.in))
			if tc.want == nil {
				if err == nil {
					t.Fatalf("Parse(%q) = %+v; want an error", tc.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tc.in, err)
			}
			if got.Identity != *tc.want {
				t.Fatalf("Parse(%q) = %+v; want %+v", tc.in, got.Identity, *tc.want)
			}
		})
	}
}

func TestParseKeepsOurFields(t *testing.T) {
	s := lockrec.Record{Format: lockrec.Format, Identity: platform.Identity{Host: "h", PID: 1}, AcquiredAt: time.Unix(100, 5).UTC(), Nonce: "abc"}
	got, err := parseStamp(s.Marshal())
	if err != nil {
		t.Fatal(err)
	}
	if !got.AcquiredAt.Equal(s.AcquiredAt) || got.Nonce != s.Nonce || got.Format != s.Format {
		t.Fatalf("round trip: %+v; want %+v", got, s)
	}
}

// FuzzParse: any bytes parse or fail without panicking, and what
// parses names a positive pid and survives a round trip through Marshal.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"4242", " 12\n", `{"pid":5}`, `{"format":"proclock/1","host":"h","pid":5,"acquiredAt":"2026-01-01T00:00:00Z","nonce":"n"}`,
		`{"pid":"12"}`, `{"pid":1.5}`, "\ufeff{}", `{"pid":5}xx`, strings.Repeat("9", 30), "\x00\xff",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := parseStamp(data)
		if err != nil {
			return
		}
		if s.PID <= 0 {
			t.Fatalf("parsed pid %d from %q", s.PID, data)
		}
		s.Format = lockrec.Format
		again, err := parseStamp(s.Marshal())
		if err != nil || again.Identity != s.Identity {
			t.Fatalf("round trip of %+v: %+v, %v", s, again, err)
		}
	})
}

// parseStamp is Parse as the file mechanism takes it: a record naming a
// holder.
func parseStamp(data []byte) (lockrec.Record, error) {
	r, err := lockrec.Parse(data)
	if err == nil && !r.Known() {
		err = errors.New("names no holder")
	}
	return r, err
}
