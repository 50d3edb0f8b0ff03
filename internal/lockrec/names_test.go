package lockrec_test

import (
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/proclock/proclock/internal/lockrec"
)

// TestSidecarName: a sidecar's name fits in NameMax whenever the lock's own
// name does, is the plain name+suffix when that fits, and is the same for
// every caller (docs/protocol.md, "Names").
func TestSidecarName(t *testing.T) {
	suffixes := []string{lockrec.MarkSuffix, ".stale", ".stale.stale", ".stale-4194304-ABCDEFGHIJKLMNOPQRSTUVWXYZ"}
	for _, n := range []int{1, 200, 217, 218, 248, 249, 250, 254, 255} {
		for _, ch := range []string{"b", "é", "日", "\xff"} {
			base := strings.Repeat(ch, n)[:n]
			for _, suffix := range suffixes {
				got := lockrec.SidecarName(base, suffix)
				switch {
				case len(got) > lockrec.NameMax:
					t.Errorf("SidecarName(%d×%q, %q) is %d bytes, over %d", n, ch, suffix, len(got), lockrec.NameMax)
				case len(base)+len(suffix) <= lockrec.NameMax && got != base+suffix:
					t.Errorf("SidecarName(%d×%q, %q) = %q, want the plain name", n, ch, suffix, got)
				case !strings.HasSuffix(got, suffix):
					t.Errorf("SidecarName(%d×%q, %q) = %q, does not end in the suffix", n, ch, suffix, got)
				case utf8.ValidString(base) && !utf8.ValidString(got):
					t.Errorf("SidecarName(%d×%q, %q) = %q cuts a character", n, ch, suffix, got)
				case got != lockrec.SidecarName(base, suffix):
					t.Errorf("SidecarName(%d×%q, %q) differs between calls", n, ch, suffix)
				}
			}
		}
	}
}

// TestSidecarNameKeepsLongNamesApart: two long names that differ only past
// the cut have different sidecars.
func TestSidecarNameKeepsLongNamesApart(t *testing.T) {
	a := strings.Repeat("x", 250) + "a"
	b := strings.Repeat("x", 250) + "b"
	if lockrec.SidecarName(a, ".holder") == lockrec.SidecarName(b, ".holder") {
		t.Errorf("the marks of two locks that differ at byte 251 are one file: %q", lockrec.SidecarName(a, ".holder"))
	}
}

// TestSidecarNameKnown pins the rule (the hash checked with python3
// hashlib), so that a change to it (which would
// split processes of two versions onto different sidecars) fails here.
func TestSidecarNameKnown(t *testing.T) {
	base := strings.Repeat("n", 250)
	want := strings.Repeat("n", 231) + "~" + "213b83271b358ed9" + ".holder"
	if got := lockrec.SidecarName(base, ".holder"); got != want {
		t.Errorf("SidecarName(250×n, .holder) = %q, want %q", got, want)
	}
	if got, want := lockrec.Sidecar(filepath.Join("dir", "x.lock"), ".stale"), filepath.Join("dir", "x.lock.stale"); got != want {
		t.Errorf("Sidecar = %q, want %q", got, want)
	}
}
