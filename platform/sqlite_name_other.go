//go:build (darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos) && !sqlite3_dotlk

package platform

import "github.com/proclock/proclock/internal/sqlapi"

// shortSQLiteName has no way here to name a file shorter than its path
// (darwin's and the BSDs' paths are themselves limited to 1023 bytes).
func shortSQLiteName(string, string) (string, func(), error) {
	return "", nil, sqlapi.ErrSQLitePathTooLong
}
