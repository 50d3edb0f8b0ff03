// Package lockrec is the on-disk format both mechanisms share, how it is
// read and written, and the words both answer in (docs/protocol.md).
package lockrec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"strconv"
	"time"

	"github.com/proclock/proclock/platform"
)

const (
	// Format marks a record of proclock's, whose fields are trusted in full.
	Format = "proclock/1"
	// FileMode is the mode of every file proclock creates, before the
	// umask (docs/security.md).
	FileMode fs.FileMode = 0o664
	// MaxSize is the most a lock file or a mark may hold and be read.
	MaxSize = 64 << 10
	// DatabaseSize is the size of EmptyDatabase.
	DatabaseSize = 512
)

// Record says who holds a lock: a stamp or a mark. A mark of a holder
// whose identity is unknown has a zero Identity.
type Record struct {
	Format string `json:"format"`
	platform.Identity
	AcquiredAt time.Time `json:"acquiredAt"`
	Nonce      string    `json:"nonce"`
	// LockDev and LockIno name the file a mark's writer locked, so that
	// the next to lock it knows the mark for a leftover (docs/protocol.md).
	LockDev uint64 `json:"lockDev,omitempty"`
	LockIno uint64 `json:"lockIno,omitempty"`
	// Foreign is set for another tool's record or a bare pid.
	Foreign bool `json:"-"`
}

// Marshal encodes r as one JSON object and a newline, its format marker
// first (which tells a torn record of ours). It is never DatabaseSize
// bytes long, so that a file's size tells a stamp from the empty database.
func (r Record) Marshal() []byte {
	r.Format = Format
	if y := r.AcquiredAt.Year(); y < 0 || y > 9999 {
		r.AcquiredAt = time.Time{} // JSON cannot say it; nothing is judged by it
	}
	b, err := json.Marshal(r)
	if err != nil {
		panic("lockrec: encoding a record: " + err.Error()) // strings, integers, a time: never
	}
	if len(b)+1 == DatabaseSize {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// Known reports whether the record names a holder (a pid); nil names none.
func (r *Record) Known() bool { return r != nil && r.PID > 0 }

// Holder is the recorded identity, or nil when unknown.
func (r *Record) Holder() *platform.Identity {
	if !r.Known() {
		return nil
	}
	id := r.Identity
	return &id
}

var errNotRecord = errors.New("not a lock record")

// Parse reads a record: a bare positive pid, one of ours (pid 0: holder
// unknown), or another tool's JSON object with a positive pid, of which
// host, boot id, pid, nonce and acquiredAt are taken.
func Parse(data []byte) (Record, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && !bytes.ContainsFunc(trimmed, func(c rune) bool { return c < '0' || c > '9' }) {
		pid, err := strconv.Atoi(string(trimmed))
		if err != nil || pid <= 0 {
			return Record{}, errNotRecord
		}
		return Record{Identity: platform.Identity{PID: pid}, Foreign: true}, nil
	}
	var r Record
	if err := json.Unmarshal(data, &r); r.Format == Format {
		if err != nil || r.PID < 0 {
			return Record{}, errNotRecord // ours, but broken
		}
		return r, nil
	}
	var foreign struct {
		Host       string          `json:"host"`
		BootID     string          `json:"bootId"`
		PID        int             `json:"pid"`
		AcquiredAt json.RawMessage `json:"acquiredAt"`
		Nonce      any             `json:"nonce"`
	}
	if err := json.Unmarshal(data, &foreign); err != nil || foreign.PID <= 0 {
		return Record{}, errNotRecord
	}
	r = Record{Identity: platform.Identity{Host: foreign.Host, BootID: foreign.BootID, PID: foreign.PID}, Foreign: true}
	r.AcquiredAt = foreignTime(foreign.AcquiredAt)
	if s, ok := foreign.Nonce.(string); ok {
		r.Nonce = s
	}
	return r, nil
}

// foreignTime reads another tool's acquiredAt; zero when it is no time.
func foreignTime(raw json.RawMessage) time.Time {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, _ := time.Parse(time.RFC3339Nano, s) // zero on error
		return t
	}
	var ms int64
	if json.Unmarshal(raw, &ms) == nil && ms > 0 {
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

// Kind is what a lock file's bytes are.
type Kind int

const (
	Empty   Kind = iota // no bytes
	SQLite              // EmptyDatabase, byte for byte
	Stamp               // a record with a pid (ours, another tool's, a legacy pid)
	Torn                // the start of a record of ours or of the empty database
	Foreign             // anything else: not a lock file, never changed
)

func (k Kind) String() string {
	if k >= Empty && k < Foreign {
		return [...]string{"empty", "sqlite", "stamp", "torn"}[k]
	}
	return "foreign"
}

// sqliteMagic opens every SQLite database file.
const sqliteMagic = "SQLite format 3\x00"

// Classify tells what a regular file of at most MaxSize bytes holds.
func Classify(data []byte) Kind {
	k, _ := classify(data)
	return k
}

// classify is Classify, with the stamp parsed.
func classify(data []byte) (Kind, *Record) {
	switch {
	case len(data) == 0:
		return Empty, nil
	case bytes.Equal(data, emptyDatabase) || paddedDatabase(data):
		return SQLite, nil
	case len(data) >= len(sqliteMagic) && bytes.HasPrefix(emptyDatabase, data):
		return Torn, nil
	case bytes.HasPrefix(data, []byte(sqliteMagic)):
		return Foreign, nil // someone's database (a WAL one's tables may all be in -wal)
	}
	if r, err := Parse(data); err == nil && r.Known() {
		return Stamp, &r
	}
	if isTorn(data) {
		return Torn, nil
	}
	return Foreign, nil
}

// paddedDatabase reports whether data is the empty database followed by
// zeros short of a second page (Cover).
func paddedDatabase(data []byte) bool {
	return len(data) > DatabaseSize && len(data) < 2*DatabaseSize &&
		bytes.Equal(data[:DatabaseSize], emptyDatabase) && len(bytes.TrimLeft(data[DatabaseSize:], "\x00")) == 0
}

// tornPrefix opens every record of ours (Marshal writes the marker first).
const tornPrefix = `{"format":"` + Format + `"`

// isTorn reports whether data is a strict prefix of one of our records: it
// starts as ours do and is JSON, cut inside the object, as far as it goes.
func isTorn(data []byte) bool {
	n := min(len(data), len(tornPrefix))
	if !bytes.Equal(data[:n], []byte(tornPrefix[:n])) {
		return false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	depth := 0
	for {
		tok, err := dec.Token()
		switch {
		case errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF):
			return depth > 0 // cut inside the object
		case err != nil:
			return false
		}
		switch tok {
		case json.Delim('{'), json.Delim('['):
			depth++
		case json.Delim('}'), json.Delim(']'):
			depth--
			if depth == 0 {
				return false // a whole object: not cut
			}
		}
	}
}

// EmptyDatabase returns a SQLite database of one page and no tables: what
// the SQLite mechanism writes into a lock file (docs/protocol.md).
func EmptyDatabase() []byte { return bytes.Clone(emptyDatabase) }

var emptyDatabase = newEmptyDatabase()

func newEmptyDatabase() []byte {
	const pageSize = DatabaseSize
	b := make([]byte, pageSize)
	copy(b, sqliteMagic)
	be16 := func(off, v int) { b[off], b[off+1] = byte(v>>8), byte(v) }
	be32 := func(off, v int) { be16(off, v>>16); be16(off+2, v&0xffff) }
	be16(16, pageSize)
	b[18], b[19] = 1, 1              // legacy (rollback journal) read and write versions
	b[21], b[22], b[23] = 64, 32, 32 // payload fractions, fixed by the format
	be32(24, 1)                      // file change counter
	be32(28, 1)                      // database size in pages
	be32(44, 4)                      // schema format
	be32(56, 1)                      // text encoding: UTF-8
	be32(92, 1)                      // version-valid-for, equal to the change counter
	be32(96, 3046000)                // the SQLite version that wrote it, as SQLite records it
	b[100] = 0x0d                    // page 1: an empty table b-tree leaf (the schema)
	be16(105, pageSize)              // its cell content starts at the page's end
	return b
}
