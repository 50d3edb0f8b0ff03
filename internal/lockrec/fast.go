package lockrec

import (
	"bytes"
	"strconv"
	"time"
)

// IsHeld of a held file lock reads one stamp, and encoding/json's reading
// of it is a quarter of the call's CPU (docs/performance.md). Records
// proclock writes are flat and plain, so they are read here by hand;
// anything else goes to encoding/json. FuzzFastRecord holds parseFast to
// encoding/json's answer. Records are written by encoding/json: once per
// acquisition, its cost is lost in the call's.

// parseFast reads a record of ours as encoding/json writes it: a flat
// object whose first field is the format marker, with known keys once
// each, plain strings, canonical unsigned integers and a canonical RFC
// 3339 time, then white space. Anything else is not ok, for encoding/json
// to judge.
func parseFast(data []byte) (Record, bool) {
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
		var bit uint16
		bit, s, ok = r.field(string(key), rest[1:])
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

// field reads the value of key from s into r, and returns the key's bit
// (0 for a key of no record of ours) and what follows the value.
func (r *Record) field(key string, s []byte) (bit uint16, rest []byte, ok bool) {
	switch key {
	case "host":
		r.Host, rest, ok = text(s)
		return 1 << 0, rest, ok
	case "bootId":
		r.BootID, rest, ok = text(s)
		return 1 << 1, rest, ok
	case "nonce":
		r.Nonce, rest, ok = text(s)
		return 1 << 2, rest, ok
	case "acquiredAt":
		r.AcquiredAt, rest, ok = timestamp(s)
		return 1 << 3, rest, ok
	case "pid":
		r.PID, rest, ok = integer(s)
		return 1 << 4, rest, ok
	case "launcherPid":
		r.LauncherPID, rest, ok = integer(s)
		return 1 << 5, rest, ok
	case "startTime":
		r.StartTime, rest, ok = number(s)
		return 1 << 6, rest, ok
	case "pidNamespace":
		r.PIDNamespace, rest, ok = number(s)
		return 1 << 7, rest, ok
	case "lockDev":
		r.LockDev, rest, ok = number(s)
		return 1 << 8, rest, ok
	case "lockIno":
		r.LockIno, rest, ok = number(s)
		return 1 << 9, rest, ok
	case "timeNamespace":
		r.TimeNamespace, rest, ok = number(s)
		return 1 << 10, rest, ok
	case "bootOffset":
		r.BootOffset, rest, ok = signed(s)
		return 1 << 11, rest, ok
	}
	return 0, s, false
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
