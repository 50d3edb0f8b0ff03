//go:build (darwin || windows || freebsd || netbsd || openbsd || dragonfly || illumos) && !sqlite3_dotlk

package platform

import "github.com/proclock/proclock/internal/sqlapi"

// shortSQLiteName has no way here to name a file shorter than its path.
func shortSQLiteName(string, string) (string, func(), error) {
	return "", nil, sqlapi.ErrSQLitePathTooLong
}
