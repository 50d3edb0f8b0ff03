package cli

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestPlantedEscapes: a stamp whose host name carries a terminal's escape
// sequence and a newline (another host's, so held whatever its pid) reaches
// status's and run's text as escaped text: it neither clears the screen
// nor forges a line. --json carries it as it is.
func TestPlantedEscapes(t *testing.T) {
	t.Parallel()
	const host = "evil\x1b[2J\nfake: free"
	lock := filepath.Join(t.TempDir(), "x.lock")
	quoted, _ := json.Marshal(host)
	write(t, lock, fmt.Appendf(nil, `{"format":"proclock/1","host":%s,"pid":4242,"acquiredAt":"2026-01-02T03:04:05Z","nonce":"n"}`, quoted))
	clean := func(what, s string, lines int) {
		t.Helper()
		if strings.ContainsFunc(s[:max(len(s)-1, 0)], func(r rune) bool { return r < ' ' && r != '\n' }) ||
			strings.Count(s, "\n") != lines || strings.Contains(s, "\nfake: free") || !strings.Contains(s, `evil\x1b[2J\nfake: free`) {
			t.Errorf("%s printed %q: want %d lines, the host escaped", what, s, lines)
		}
	}
	for _, mech := range mechanisms {
		st := runProclock(t, "status", "--mechanism", mech, lock)
		if st.code != 1 {
			t.Fatalf("status --mechanism %s: exit %d, want 1 (held); stderr %q", mech, st.code, st.stderr)
		}
		clean("status --mechanism "+mech, st.stdout, 2)
		run := runProclock(t, line("run", "-n", "--mechanism", mech, lock, helper("exit", "0"))...)
		if run.code != 1 {
			t.Fatalf("run -n --mechanism %s: exit %d, want 1 (held); stderr %q", mech, run.code, run.stderr)
		}
		clean("run -n --mechanism "+mech, run.stderr, 1)
		if js := statusJSON(t, lock, "--mechanism", mech); js.Holder == nil || js.Holder.Host != host {
			t.Errorf("status --json --mechanism %s: holder %+v, want the host as it is", mech, js.Holder)
		}
	}
}

// TestPrintable: control characters escaped, everything else as it is.
func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"buildhost":            "buildhost",
		"été":                  "été",
		"a\x1b[2Jb":            `a\x1b[2Jb`,
		"a\nb\r\t":             `a\nb\r\t`,
		"\u009b31m":            `\u009b31m`,
		`already \x1b escaped`: `already \x1b escaped`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}
