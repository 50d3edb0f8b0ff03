package cli

import (
	"bytes"
	"slices"
	"strings"
	"testing"
)

// listedExits are the codes that help's "Exit status:" section lists,
// whether as a table (run) or on one line (status).
func listedExits(t *testing.T, help string) []string {
	t.Helper()
	_, section, ok := strings.Cut(help, "Exit status:\n")
	if !ok {
		t.Fatalf("no \"Exit status:\" section in the help:\n%s", help)
	}
	section, _, _ = strings.Cut(section, "\n\n")
	var codes []string
	for line := range strings.Lines(section) {
		if strings.HasPrefix(line, "  ") && !strings.HasPrefix(line, "   ") {
			codes = append(codes, strings.Fields(line)[0])
		}
	}
	return codes
}

// helpOf is what "proclock help SUB" prints for a command with backends.
func helpOf(t *testing.T, sub string, backends ...Backend) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{"help", sub}, nil, &out, &errb, backends...); code != exitOK {
		t.Fatalf("help %s: exit %d, %s", sub, code, errb.String())
	}
	return out.String()
}

// TestHelpExitCodes: the host-only command (cmd/proclock, no backends)
// lists none of the codes that only a backend's lock gives (123
// unreachable, 124 a cluster wait ran out); a command with a backend
// lists them all.
func TestHelpExitCodes(t *testing.T) {
	for _, tc := range []struct {
		sub      string
		backends []Backend
		want     []string
	}{
		{"run", nil, []string{"COMMAND's", "1", "2", "125", "126,", "128+N"}},
		{"run", []Backend{&fakeBackend{}}, []string{"COMMAND's", "1", "2", "123", "124", "125", "126,", "128+N"}},
		{"status", nil, []string{"0", "1", "2"}},
		{"status", []Backend{&fakeBackend{}}, []string{"0", "1", "2", "123"}},
	} {
		help := helpOf(t, tc.sub, tc.backends...)
		if got := listedExits(t, help); !slices.Equal(got, tc.want) {
			t.Errorf("help %s with %d backends lists exit codes %q; want %q", tc.sub, len(tc.backends), got, tc.want)
		}
		if len(tc.backends) == 0 && strings.Contains(help, "etcd") && strings.Contains(help, "reached") {
			t.Errorf("help %s of the host-only command speaks of an unreachable server:\n%s", tc.sub, help)
		}
	}
}
