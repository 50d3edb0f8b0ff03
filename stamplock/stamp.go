package stamplock

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"time"

	"github.com/proclock/proclock/platform"
)

// Format marks a stamp written by proclock; its fields are then trusted in
// full, start time included.
const Format = "proclock/1"

// Stamp is what a lock file says of its holder. Its JSON field names are the
// ones other tools use for the same facts.
type Stamp struct {
	Format string `json:"format"`
	platform.Identity
	AcquiredAt time.Time `json:"acquiredAt"`
	Nonce      string    `json:"nonce"`
}

// Marshal encodes s as one JSON object and a newline.
func (s Stamp) Marshal() []byte {
	b, err := json.Marshal(s)
	if err != nil {
		// A Stamp holds strings, integers and a time: it always encodes.
		panic("stamplock: encoding a stamp: " + err.Error())
	}
	return append(b, '\n')
}

// errNoStamp says a file's bytes are not a stamp.
var errNoStamp = errors.New("not a stamp")

// ParseStamp reads a lock file's bytes. It accepts, in order:
//   - a proclock stamp (Format set): every field kept;
//   - another tool's JSON object: only what it says for certain, host,
//     boot id and pid, is kept, since its other fields' units are not ours;
//   - a bare decimal pid, with surrounding whitespace (a legacy pid file):
//     judged by pid alone, on this host.
//
// Anything else, including a pid that is not a positive integer, is an error.
func ParseStamp(data []byte) (Stamp, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && isDigits(trimmed) {
		pid, err := strconv.Atoi(string(trimmed))
		if err != nil || pid <= 0 {
			return Stamp{}, errNoStamp
		}
		return Stamp{Identity: platform.Identity{PID: pid}}, nil
	}
	var s Stamp
	err := json.Unmarshal(data, &s)
	if err != nil && s.Format == Format {
		return Stamp{}, errNoStamp // ours, but broken: not to be trusted
	}
	if err != nil || s.Format != Format {
		// Another tool's stamp: its other fields may be of other types
		// and units, so only these three are read, and trusted.
		var foreign struct {
			Host   string `json:"host"`
			BootID string `json:"bootId"`
			PID    int    `json:"pid"`
		}
		if err := json.Unmarshal(data, &foreign); err != nil {
			return Stamp{}, errNoStamp
		}
		s = Stamp{Identity: platform.Identity{Host: foreign.Host, BootID: foreign.BootID, PID: foreign.PID}}
	}
	if s.PID <= 0 {
		return Stamp{}, errNoStamp
	}
	return s, nil
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
