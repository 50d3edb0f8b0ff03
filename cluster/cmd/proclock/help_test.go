package main

import (
	"bytes"
	"regexp"
	"strings"
	"testing"

	"github.com/proclock/proclock/internal/cli"
)

// output is what this command prints for args, which must succeed.
func output(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if code := cli.Main(args, nil, &out, &errb, newEtcdBackend()); code != 0 {
		t.Fatalf("proclock %s: exit %d, %s", strings.Join(args, " "), code, errb.String())
	}
	return out.String()
}

// TestHelpNamesClusterCodes: the cluster command's help keeps the exit
// codes that only a cluster lock gives (the host-only command's leaves
// them out: internal/cli TestHelpExitCodes), and its man page and its
// completion scripts have the etcd options.
func TestHelpNamesClusterCodes(t *testing.T) {
	for _, tc := range []struct {
		args  []string
		codes []string
	}{
		{[]string{"help", "run"}, []string{"123", "124", "125"}},
		{[]string{"help", "status"}, []string{"123"}},
	} {
		help := output(t, tc.args...)
		_, section, _ := strings.Cut(help, "Exit status:\n")
		section, _, _ = strings.Cut(section, "\n\n")
		for _, code := range tc.codes {
			if !regexp.MustCompile(`(?m)^  ` + code + ` `).MatchString(section) {
				t.Errorf("proclock %s lists no exit code %s:\n%s", strings.Join(tc.args, " "), code, section)
			}
		}
	}
	page := output(t, "help", "--man")
	for _, opt := range []string{"--ttl", "--lock-delay", "--connect-timeout", "123", "124"} {
		if !strings.Contains(page, ".TP\n\\fB"+strings.ReplaceAll(opt, "-", `\-`)) {
			t.Errorf("proclock help --man has no entry for %s", opt)
		}
	}
	for _, shell := range []string{"bash", "zsh", "fish"} {
		script := output(t, "completion", shell)
		for _, opt := range []string{"ttl", "lock-delay", "connect-timeout"} {
			if !strings.Contains(script, "--"+opt) && !strings.Contains(script, "-l "+opt) {
				t.Errorf("proclock completion %s does not offer --%s", shell, opt)
			}
		}
	}
}
