package cli

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/proclock/proclock"
)

// The options the docs name are checked against the parsers here, so that
// the docs cannot name an option the command does not have, nor call one
// refused that it takes (docs/command.md, "Options").

// parseAs parses opt as one option of sub ("run" or "status"), alone or
// with one of a few values, before a PATH (and, for run, a COMMAND). It
// returns nil when one of the forms is accepted (help and version
// included), else the error of the last.
func parseAs(sub, opt string) error {
	var forms [][]string
	if sub == "status" {
		forms = [][]string{{opt, "x.lock"}, {opt, "auto", "x.lock"}}
	} else {
		forms = [][]string{
			{opt, "x.lock", "--", "true"},
			{opt, "5", "x.lock", "--", "true"},
			{opt, "auto", "x.lock", "--", "true"},
			{opt, "true", "x.lock"},
		}
	}
	var err error
	for _, args := range forms {
		if sub == "status" {
			_, err = parseStatusArgs(args)
		} else {
			var x runExtra
			_, err = parseRunArgsWith(args, x.options(nil))
		}
		if err == nil || errors.Is(err, errHelp) || errors.Is(err, errVersion) {
			return nil
		}
	}
	return err
}

// unknown reports whether err says the parser does not know the option,
// rather than refusing it with a reason. A long option written with one
// dash (-remove) is refused with a hint, as docs/command.md says.
func unknown(err error) bool {
	return err != nil && strings.Contains(err.Error(), "unknown option") && !strings.Contains(err.Error(), "two dashes")
}

func readDoc(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, name))
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

var codeSpan = regexp.MustCompile("`([^`]+)`")

// TestDocumentedOptions: each row of docs/command.md's table of options
// is what the parser does (refused where it says refused, taken
// otherwise), and every option the docs write in code, alone or after
// `proclock run`, `proclock status`, `status`, is one the parser knows.
func TestDocumentedOptions(t *testing.T) {
	command := readDoc(t, "docs/command.md")
	rows := 0
	for line := range strings.Lines(command) {
		cols := strings.Split(line, "|")
		if len(cols) < 4 || !strings.Contains(cols[1]+cols[2], "`-") {
			continue
		}
		rows++
		refused := strings.TrimSpace(cols[2]) == "refused"
		for _, col := range cols[1:3] {
			for _, m := range codeSpan.FindAllStringSubmatch(col, -1) {
				opt := strings.Fields(m[1])[0]
				if !strings.HasPrefix(opt, "-") {
					continue
				}
				err := parseAs("run", opt)
				switch {
				case unknown(err):
					t.Errorf("docs/command.md's table names %s; proclock run does not know it: %v", opt, err)
				case refused && err == nil:
					t.Errorf("docs/command.md's table says %s is refused; proclock run takes it", opt)
				case !refused && err != nil:
					t.Errorf("docs/command.md's table names %s; proclock run refuses it: %v", opt, err)
				}
			}
		}
	}
	if rows < 10 {
		t.Fatalf("found %d rows of options in docs/command.md's table; want the table", rows)
	}

	docs, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, doc := range append(docs, filepath.Join(repoRoot, "README.md")) {
		name, _ := filepath.Rel(repoRoot, doc)
		text := readDoc(t, name)
		for _, m := range codeSpan.FindAllStringSubmatch(text, -1) {
			words := strings.Fields(m[1])
			sub := "run"
			switch {
			case len(words) > 1 && words[0] == "proclock" && (words[1] == "run" || words[1] == "status"):
				sub, words = words[1], words[2:]
			case len(words) > 0 && words[0] == "status":
				sub, words = "status", words[1:]
			case len(words) > 0 && strings.HasPrefix(words[0], "-") && name == filepath.Join("docs", "command.md"):
			default:
				continue
			}
			for _, w := range words {
				if w == "--" {
					break // COMMAND follows
				}
				if !strings.HasPrefix(w, "-") {
					continue
				}
				checked++
				if err := parseAs(sub, w); unknown(err) {
					t.Errorf("%s names %s (in `%s`); proclock %s does not know it: %v", name, w, m[1], sub, err)
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("checked %d options named in the docs; want the table's and more", checked)
	}
}

// TestNetworkFSHint: refused on a network filesystem, the command says
// which option locks there anyway (docs/installation.md, "Network
// filesystems"), and the error still matches proclock.ErrNetworkFS.
func TestNetworkFSHint(t *testing.T) {
	refusal := &proclock.Error{Op: "acquire", Path: "/mnt/nfs/app.lock", Err: proclock.ErrNetworkFS}
	err := withHint(refusal)
	if !strings.Contains(err.Error(), "--allow-network-fs") || !errors.Is(err, proclock.ErrNetworkFS) {
		t.Errorf("withHint(%v) = %v; want it to name --allow-network-fs and match ErrNetworkFS", refusal, err)
	}
	if other := errors.New("no such directory"); withHint(other) != other {
		t.Errorf("withHint changed an error that is not a network filesystem's: %v", withHint(other))
	}
}
