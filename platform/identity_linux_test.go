package platform

import (
	"errors"
	"testing"
)

func TestParseStat(t *testing.T) {
	// Fields 4..21 as a real line has them; starttime (22) follows.
	const mid = " 1 4336 2642 0 -1 4194304 102 0 0 0 0 0 0 0 20 0 1 0 "
	const tail = " 3133440 417 18446744073709551615"
	tests := []struct {
		name    string
		line    string
		want    procStat
		wantErr bool
	}{
		{
			name: "plain",
			line: "4338 (cat) R" + mid + "24604" + tail + "\n",
			want: procStat{pid: 4338, state: 'R', startTime: 24604},
		},
		{
			name: "command with spaces and parentheses",
			line: "77 (a) (b) Z 9 9 9) S" + mid + "31337" + tail,
			want: procStat{pid: 77, state: 'S', startTime: 31337},
		},
		{
			name: "command that looks like fields",
			line: "78 () Z 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20) Z" + mid + "42" + tail,
			want: procStat{pid: 78, state: 'Z', startTime: 42},
		},
		{
			name: "starttime is the last field",
			line: "79 (x) S" + mid + "5",
			want: procStat{pid: 79, state: 'S', startTime: 5},
		},
		{name: "truncated before starttime", line: "80 (x) S" + mid, wantErr: true},
		{name: "no parentheses", line: "81 x S" + mid + "5", wantErr: true},
		{name: "no closing parenthesis", line: "82 (x S" + mid + "5", wantErr: true},
		{name: "starttime not a number", line: "83 (x) S" + mid + "soon" + tail, wantErr: true},
		{name: "pid not a number", line: "x (x) S" + mid + "5" + tail, wantErr: true},
		{name: "state not one letter", line: "84 (x) SS" + mid + "5" + tail, wantErr: true},
		{name: "empty", line: "", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := parseStat(tt.line)
			if tt.wantErr {
				if !errors.Is(err, errBadStat) {
					t.Fatalf("parseStat = %+v, %v; want an error matching errBadStat", got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("parseStat = %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestProcIsOurs(t *testing.T) {
	// The test runs with its own namespace's /proc; a false here would
	// make every lookup lose its start time.
	if !procIsOurs() {
		t.Fatal("procIsOurs() = false for this test's /proc")
	}
}

// A wasm guest hosted by this process reads its identity from /proc alone
// (the host name from sys/kernel/hostname, the pid from self/stat); it must
// be the identity this process records natively, or a native process and
// a guest of the same host process could not judge each other's stamps.
func TestProcIdentityIsNative(t *testing.T) {
	native, err := readSelf()
	if err != nil {
		t.Fatal(err)
	}
	host, err := nativeProc.hostname()
	if err != nil {
		t.Fatal(err)
	}
	guest, err := nativeProc.identity(host, 0)
	if err != nil || guest != native {
		t.Fatalf("identity read from /proc alone = %+v, %v; want the native identity %+v", guest, err, native)
	}
}
