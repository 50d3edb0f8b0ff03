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
