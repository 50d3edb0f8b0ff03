package sqlapi

import "fmt"

// SQLiteCode is one of SQLite's primary result codes, as an error that a
// SQLConn's errors match (errors.Is) when SQLite's answer has that code.
type SQLiteCode int

// The result codes the SQLite mechanism tells apart.
const (
	SQLiteBusy    SQLiteCode = 5  // another connection holds a lock it needs
	SQLiteCorrupt SQLiteCode = 11 // the file is malformed
	SQLiteNotADB  SQLiteCode = 26 // the file is not a database
)

func (c SQLiteCode) Error() string {
	switch c {
	case SQLiteBusy:
		return "database is locked"
	case SQLiteCorrupt:
		return "database disk image is malformed"
	case SQLiteNotADB:
		return "file is not a database"
	}
	return fmt.Sprintf("SQLite result code %d", int(c))
}

// SQLiteResultCode returns c as a number, by which a SQLConn's error tells
// that c is its code.
func (c SQLiteCode) SQLiteResultCode() int { return int(c) }
