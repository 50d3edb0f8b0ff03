package cli

import (
	"fmt"
	"strings"
)

// The exit codes are listed in the help from these tables, so that a
// command lists only the codes it can give: 123 and 124 come from a
// backend's lock (notAcquired), and cmd/proclock links none.

// exitRow is one exit code of the help. host is what it means for a
// command without backends ("" when such a command never gives it),
// backend what it means with them ("" when host says it).
type exitRow struct {
	code, host, backend string
}

// runExits are proclock run's exit codes; a newline in a meaning is
// where the help breaks it.
var runExits = []exitRow{
	{code: "COMMAND's", host: "COMMAND ran (128+N when signal N killed it)"},
	{code: "1",
		host:    "the lock is held (-n), or the wait ran out (-w), as\nflock(1) has it; CODE with -E, for both",
		backend: "the lock is held (-n), or a wait for a host lock ran out\n(-w), as flock(1) has it; CODE with -E, for both"},
	{code: "2", host: "bad usage and errors"},
	{code: "123", backend: "the lock's server (etcd) could not be reached in time"},
	{code: "124", backend: "a wait for a cluster lock ran out (-w); CODE with -E"},
	{code: "125", host: "the lock was lost while COMMAND ran; COMMAND was stopped"},
	{code: "126, 127", host: "COMMAND cannot be started, or is not found"},
	{code: "128+N", host: "signal N stopped proclock while it waited for the lock"},
}

// statusExits are proclock status's exit codes.
var statusExits = []exitRow{
	{code: "0", host: "free (absent, free or stale)"},
	{code: "1", host: "held"},
	{code: "2", host: "inaccessible, foreign or an error"},
	{code: "123", backend: "the lock's server (etcd) could not be reached"},
}

// meaning is what row means for a command with backends (or none), and
// whether that command gives it at all.
func (row exitRow) meaning(backends []Backend) (string, bool) {
	if len(backends) > 0 && row.backend != "" {
		return row.backend, true
	}
	return row.host, row.host != ""
}

// exitTable is the help's "Exit status:" section for rows.
func exitTable(rows []exitRow, backends []Backend) string {
	var b strings.Builder
	b.WriteString("Exit status:\n")
	for _, row := range rows {
		text, ok := row.meaning(backends)
		if !ok {
			continue
		}
		lines := strings.Split(text, "\n")
		fmt.Fprintf(&b, "  %-11s %s\n", row.code, lines[0])
		for _, l := range lines[1:] {
			fmt.Fprintf(&b, "%14s%s\n", "", l)
		}
	}
	return b.String()
}
