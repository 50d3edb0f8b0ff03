package lockrec

import (
	"bytes"
	"strconv"
	"sync/atomic"
	"time"
)

// A lock's hot paths (IsHeld on a held file lock, every stamp written)
// spend most of their instructions in encoding/json. Records proclock
// writes are flat and plain, so they are written and read here by hand, and
// anything else goes the slow way: appendFast gives up (and Marshal uses
// encoding/json) on a value it cannot write byte for byte as encoding/json
// would, and parseFast gives up (and Parse uses encoding/json) on any input
// it does not read exactly as encoding/json would. FuzzFastRecord holds
// both to that.

// appendFast appends r's JSON encoding, as encoding/json writes it, to b;
// ok is false when r holds a value written otherwise by encoding/json
// (a string needing an escape, a time outside years 0–9999), and b is then
// unchanged.
func appendFast(b []byte, r Record) ([]byte, bool) {
	if !plain(r.Format) || !plain(r.Host) || !plain(r.BootID) || !plain(r.Nonce) {
		return b, false
	}
	if y := r.AcquiredAt.Year(); y < 0 || y > 9999 {
		return b, false
	}
	b = append(b, `{"format":"`...)
	b = append(b, r.Format...)
	b = append(b, `","host":"`...)
	b = append(b, r.Host...)
	b = append(b, '"')
	if r.BootID != "" {
		b = append(b, `,"bootId":"`...)
		b = append(b, r.BootID...)
		b = append(b, '"')
	}
	b = append(b, `,"pid":`...)
	b = strconv.AppendInt(b, int64(r.PID), 10)
	b = appendUint(b, `,"startTime":`, r.StartTime)
	b = appendUint(b, `,"pidNamespace":`, r.PIDNamespace)
	b = appendUint(b, `,"timeNamespace":`, r.TimeNamespace)
	if r.BootOffset != 0 {
		b = append(b, `,"bootOffset":`...)
		b = strconv.AppendInt(b, r.BootOffset, 10)
	}
	if r.LauncherPID != 0 {
		b = append(b, `,"launcherPid":`...)
		b = strconv.AppendInt(b, int64(r.LauncherPID), 10)
	}
	b = append(b, `,"acquiredAt":"`...)
	b = r.AcquiredAt.AppendFormat(b, time.RFC3339Nano)
	b = append(b, `","nonce":"`...)
	b = append(b, r.Nonce...)
	b = append(b, '"')
	b = appendUint(b, `,"lockDev":`, r.LockDev)
	b = appendUint(b, `,"lockIno":`, r.LockIno)
	return append(b, '}'), true
}

// appendUint appends an omitempty unsigned field.
func appendUint(b []byte, key string, v uint64) []byte {
	if v == 0 {
		return b
	}
	return strconv.AppendUint(append(b, key...), v, 10)
}

// plain reports whether encoding/json writes s as it is, between quotes:
// printable ASCII without a quote, a backslash or an HTML character.
func plain(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			return false
		}
	}
	return true
}

// parseFast reads a record of ours as appendFast writes it: a flat object
// whose first field is the format marker, with known keys once each, plain
// strings, canonical unsigned integers and a canonical RFC 3339 time, then
// white space. Anything else is not ok, for encoding/json to judge.
func parseFast(data []byte) (Record, bool) {
	// A probe that asks again and again of one holder (a watchdog's
	// IsHeld, `proclock status` in a loop) reads the same bytes each
	// time: the last record read is kept, and its bytes compared, so
	// that such a read parses nothing and allocates nothing.
	if last := lastParsed.Load(); last != nil && last.data == string(data) {
		return last.rec, true
	}
	r, ok := parseFastBytes(data)
	if ok {
		lastParsed.Store(&parsed{data: string(data), rec: r})
	}
	return r, ok
}

// parsed is a record parseFast read, and the bytes it read it from.
type parsed struct {
	data string
	rec  Record
}

// lastParsed is the last record parseFast read (a Record holds no
// pointer a caller could change through: strings, numbers, a time).
var lastParsed atomic.Pointer[parsed]

// parseFastBytes is parseFast without its memory of the last record.
func parseFastBytes(data []byte) (Record, bool) {
	const head = `{"format":"` + Format + `"`
	if !bytes.HasPrefix(data, []byte(head)) {
		return Record{}, false
	}
	r := Record{Format: Format}
	s := data[len(head):]
	var seen uint16 // a bit a key, to take each once
	for len(s) > 0 && s[0] == ',' {
		key, rest, ok := quoted(s[1:])
		if !ok || len(rest) == 0 || rest[0] != ':' {
			return Record{}, false
		}
		s = rest[1:]
		var bit uint16
		switch string(key) {
		case "host":
			bit = 1 << 0
			r.Host, s, ok = text(s)
		case "bootId":
			bit = 1 << 1
			r.BootID, s, ok = text(s)
		case "nonce":
			bit = 1 << 2
			r.Nonce, s, ok = text(s)
		case "acquiredAt":
			bit = 1 << 3
			r.AcquiredAt, s, ok = timestamp(s)
		case "pid":
			bit = 1 << 4
			r.PID, s, ok = integer(s)
		case "launcherPid":
			bit = 1 << 5
			r.LauncherPID, s, ok = integer(s)
		case "startTime":
			bit = 1 << 6
			r.StartTime, s, ok = number(s)
		case "pidNamespace":
			bit = 1 << 7
			r.PIDNamespace, s, ok = number(s)
		case "lockDev":
			bit = 1 << 8
			r.LockDev, s, ok = number(s)
		case "lockIno":
			bit = 1 << 9
			r.LockIno, s, ok = number(s)
		case "timeNamespace":
			bit = 1 << 10
			r.TimeNamespace, s, ok = number(s)
		case "bootOffset":
			bit = 1 << 11
			r.BootOffset, s, ok = signed(s)
		}
		if bit == 0 || !ok || seen&bit != 0 {
			return Record{}, false
		}
		seen |= bit
	}
	if len(s) == 0 || s[0] != '}' || len(bytes.TrimLeft(s[1:], " \t\r\n")) != 0 {
		return Record{}, false
	}
	return r, true
}

// text reads a plain string value (quoted) as a string.
func text(s []byte) (string, []byte, bool) {
	v, rest, ok := quoted(s)
	return string(v), rest, ok
}

// timestamp reads a canonical RFC 3339 time, as encoding/json writes one.
func timestamp(s []byte) (time.Time, []byte, bool) {
	v, rest, ok := quoted(s)
	if !ok {
		return time.Time{}, nil, false
	}
	t, err := time.Parse(time.RFC3339Nano, string(v))
	var canon [len(time.RFC3339Nano)]byte // the longest a time of years 0–9999 is written
	if err != nil || !bytes.Equal(t.AppendFormat(canon[:0], time.RFC3339Nano), v) {
		return time.Time{}, nil, false
	}
	return t, rest, true
}

// integer reads a canonical unsigned decimal (number) that fits an int.
func integer(s []byte) (int, []byte, bool) {
	v, rest, ok := number(s)
	if !ok || v > uint64(maxInt) {
		return 0, nil, false
	}
	return int(v), rest, true
}

// maxInt is the largest int.
const maxInt = int(^uint(0) >> 1)

// signed reads a canonical decimal that fits an int64: a number, or a
// minus sign and a number other than 0.
func signed(s []byte) (int64, []byte, bool) {
	neg := len(s) > 0 && s[0] == '-'
	if neg {
		s = s[1:]
	}
	v, rest, ok := number(s)
	switch {
	case !ok, neg && v == 0:
		return 0, nil, false
	case neg && v <= 1<<63:
		return -int64(v-1) - 1, rest, true
	case !neg && v < 1<<63:
		return int64(v), rest, true
	}
	return 0, nil, false
}

// quoted reads a plain JSON string at the start of s (no escapes, printable
// ASCII), returning its contents and the rest.
func quoted(s []byte) (v, rest []byte, ok bool) {
	if len(s) == 0 || s[0] != '"' {
		return nil, nil, false
	}
	for i := 1; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"':
			return s[1:i], s[i+1:], true
		case c < 0x20 || c > 0x7e || c == '\\':
			return nil, nil, false
		}
	}
	return nil, nil, false
}

// number reads a canonical unsigned decimal at the start of s (no sign, no
// leading zero, no fraction or exponent, within uint64).
func number(s []byte) (v uint64, rest []byte, ok bool) {
	n := 0
	for n < len(s) && s[n] >= '0' && s[n] <= '9' {
		n++
	}
	if n == 0 || (n > 1 && s[0] == '0') || (n < len(s) && (s[n] == '.' || s[n] == 'e' || s[n] == 'E')) {
		return 0, nil, false
	}
	v, err := strconv.ParseUint(string(s[:n]), 10, 64)
	if err != nil {
		return 0, nil, false
	}
	return v, s[n:], true
}
