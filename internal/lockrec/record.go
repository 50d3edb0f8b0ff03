// Package lockrec is the on-disk format that proclock's two mechanisms
// share: the record a holder writes (the file mechanism's stamp, the SQLite
// mechanism's mark in "<path>.holder"), how a lock file's bytes are told
// apart from a file that is not a lock, and how both are read; and the
// words both mechanisms answer in: a State, and a HeldError naming the
// holder. The protocol that uses them is in docs/protocol.md.
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

// Format marks a record written by proclock; its fields are then trusted in
// full, start time included.
const Format = "proclock/1"

// FileMode is the mode every file proclock creates is created with, before
// the umask: anyone may read who holds a lock; its owner, and its group
// where the umask allows (002), may write it; others never, whatever the
// umask (docs/security.md).
const FileMode fs.FileMode = 0o664

// MaxSize is the most a lock file or a mark may hold and still be read.
const MaxSize = 64 << 10

// Record says who holds a lock: the file mechanism's stamp, or the SQLite
// mechanism's mark. Its JSON field names are the ones other tools use for
// the same facts. A mark of a holder whose identity is unknown has a zero
// Identity.
type Record struct {
	Format string `json:"format"`
	platform.Identity
	AcquiredAt time.Time `json:"acquiredAt"`
	Nonce      string    `json:"nonce"`
	// LockDev and LockIno name the file a mark's writer locked (its
	// device and inode), for the process that holds the kernel's lock on
	// that file next: the mark is then its writer's leftover
	// (docs/protocol.md). Zero in stamps.
	LockDev uint64 `json:"lockDev,omitempty"`
	LockIno uint64 `json:"lockIno,omitempty"`
	// Foreign is set for another tool's record: only Host, BootID and
	// PID (and AcquiredAt, when it reads as a time) are taken from it.
	Foreign bool `json:"-"`
}

// Marshal encodes r as one JSON object and a newline, its format marker
// first (which is what tells a torn record of ours, see Classify). It is
// never DatabaseSize bytes long (a space is added if it would be), so that
// a lock file's size alone tells a stamp from the empty database.
func (r Record) Marshal() []byte {
	r.Format = Format
	if y := r.AcquiredAt.Year(); y < 0 || y > 9999 {
		// JSON's time has four-digit years: a clock out of them (a
		// Platform.Clock of the caller's, a fake world far ahead) leaves
		// the time unrecorded; nothing judges a holder by it.
		r.AcquiredAt = time.Time{}
	}
	b, err := json.Marshal(r)
	if err != nil {
		// A Record holds strings, integers and a time of years 0–9999:
		// it always encodes.
		panic("lockrec: encoding a record: " + err.Error())
	}
	if len(b)+1 == DatabaseSize {
		b = append(b, ' ')
	}
	return append(b, '\n')
}

// DatabaseSize is the size of EmptyDatabase.
const DatabaseSize = 512

// Known reports whether the record names a holder (it has a pid); a nil
// record names none.
func (r *Record) Known() bool { return r != nil && r.PID > 0 }

// Holder is the recorded identity, or nil when unknown.
func (r *Record) Holder() *platform.Identity {
	if r == nil || !r.Known() {
		return nil
	}
	id := r.Identity
	return &id
}

// errNotRecord says bytes are not a record.
var errNotRecord = errors.New("not a lock record")

// Parse reads a record. It accepts, in order:
//   - a bare decimal pid with surrounding whitespace (a legacy pid file):
//     judged by pid alone, on this host;
//   - a proclock record (Format set): every field kept; a mark without an
//     identity (pid 0) says "holder unknown";
//   - another tool's JSON object: host, boot id and pid, and acquiredAt as
//     RFC 3339 or epoch milliseconds; its other fields' units are not ours.
//
// Anything else is an error, as is another tool's record without a
// positive pid and a legacy pid that is not positive.
func Parse(data []byte) (Record, error) {
	trimmed := bytes.TrimSpace(data)
	if len(trimmed) > 0 && isDigits(trimmed) {
		pid, err := strconv.Atoi(string(trimmed))
		if err != nil || pid <= 0 {
			return Record{}, errNotRecord
		}
		return Record{Identity: platform.Identity{PID: pid}, Foreign: true}, nil
	}
	var r Record
	err := json.Unmarshal(data, &r)
	switch {
	case r.Format == Format && err != nil:
		return Record{}, errNotRecord // ours, but broken: not to be trusted
	case r.Format == Format:
		if r.PID < 0 {
			return Record{}, errNotRecord
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

// foreignTime reads another tool's acquiredAt: an RFC 3339 string or
// milliseconds since the epoch; zero when it is neither.
func foreignTime(raw json.RawMessage) time.Time {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		t, err := time.Parse(time.RFC3339Nano, s)
		if err != nil {
			return time.Time{}
		}
		return t
	}
	var ms int64
	if json.Unmarshal(raw, &ms) == nil && ms > 0 {
		return time.UnixMilli(ms)
	}
	return time.Time{}
}

func isDigits(b []byte) bool {
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// Kind is what a lock file's bytes are.
type Kind int

const (
	// Empty: no bytes; a SQLite lock, or a stamp not written yet.
	Empty Kind = iota
	// SQLite: the empty database a SQLite lock's file holds
	// (EmptyDatabase), byte for byte.
	SQLite
	// Stamp: a record with a pid (ours, another tool's, a legacy pid).
	Stamp
	// Torn: the start of a stamp of ours, or of the empty database,
	// that its writer did not finish.
	Torn
	// Foreign: anything else; not a lock file, never to be changed.
	Foreign
)

func (k Kind) String() string {
	switch k {
	case Empty:
		return "empty"
	case SQLite:
		return "sqlite"
	case Stamp:
		return "stamp"
	case Torn:
		return "torn"
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

// classify is Classify, with the stamp it parsed.
func classify(data []byte) (Kind, *Record) {
	switch {
	case len(data) == 0:
		return Empty, nil
	case bytes.Equal(data, emptyDatabase) || paddedDatabase(data):
		return SQLite, nil
	case len(data) >= len(sqliteMagic) && bytes.HasPrefix(emptyDatabase, data):
		return Torn, nil // the empty database, cut short by a crash
	case bytes.HasPrefix(data, []byte(sqliteMagic)):
		// Someone's database, though it may look empty: a WAL
		// database's tables can all be in its -wal file.
		return Foreign, nil
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
// zeros short of a second page: what a writer leaves that writes the
// database in one write over a longer stamp (Cover).
func paddedDatabase(data []byte) bool {
	if len(data) <= DatabaseSize || len(data) >= 2*DatabaseSize || !bytes.Equal(data[:DatabaseSize], emptyDatabase) {
		return false
	}
	for _, b := range data[DatabaseSize:] {
		if b != 0 {
			return false
		}
	}
	return true
}

// tornPrefix opens every record of ours (Marshal writes the marker first).
const tornPrefix = `{"format":"` + Format + `"`

// isTorn reports whether data is a strict prefix of one of our records: it
// starts as ours does (or is a start of that start), and is JSON as far as
// it goes. A user's file of "{" and text, another tool's cut record, or a
// whole JSON object is not.
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

// EmptyDatabase returns the bytes of a SQLite database of one 512-byte page
// and no tables: what the SQLite mechanism writes into a lock file it
// creates or clears. A file-mechanism process never writes it, so a file
// that holds it is a SQLite lock's, never a stamp being written, and is
// free as soon as no live mark stands beside it (docs/protocol.md). Only
// these bytes are a SQLite lock: any other database is someone's data.
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
