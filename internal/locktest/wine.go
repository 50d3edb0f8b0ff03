package locktest

import "testing"

// Wine returns wine's version ("wine 8.0") when this windows binary runs
// under wine, and "" on Windows itself and on every other system.
func Wine() string { return wineVersion() }

// SkipOnWine skips t under wine, whose limitation (what wine does not do
// as Windows does) keeps the test from telling anything there.
func SkipOnWine(t testing.TB, limitation string) {
	t.Helper()
	if v := Wine(); v != "" {
		t.Skipf("%s: %s", v, limitation)
	}
}

// What wine 8.0 does otherwise than Windows, for SkipOnWine.
const (
	// WineBirthTime keeps the file mechanism from working under wine:
	// its lock file's identity changes when the stamp is written, so the
	// lock taken looks like another's.
	WineBirthTime = "a file's creation time reads as its last-write time, " +
		"so a file's identity (lockfs.FileID) changes when the file is written"
	WineSymlinks      = "CreateSymbolicLink is a stub that reports success and creates nothing"
	WineDeletePending = "a removed file keeps its name while it is open, and opening " +
		"the name again opens the removed file (Windows refuses that open)"
)
