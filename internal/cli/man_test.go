package cli

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestManPageCurrent: docs/proclock.1 is the page that the host-only
// command's help makes now; an edit to the help without go generate
// fails here.
func TestManPageCurrent(t *testing.T) {
	want := manPage(nil)
	got := readDoc(t, "docs/proclock.1")
	if got == want {
		return
	}
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := 0; i < len(g) && i < len(w); i++ {
		if g[i] != w[i] {
			t.Fatalf("docs/proclock.1 is out of date (run go generate ./cmd/proclock): line %d is\n\t%s\nthe help makes\n\t%s", i+1, g[i], w[i])
		}
	}
	t.Fatalf("docs/proclock.1 is out of date (run go generate ./cmd/proclock): %d lines, the help makes %d", len(g), len(w))
}

// manSection is the text of the page's section named title, as troff.
func manSection(t *testing.T, page, title string) string {
	t.Helper()
	_, rest, ok := strings.Cut(page, ".SH "+title+"\n")
	if !ok {
		t.Fatalf("no section %s in the page", title)
	}
	section, _, _ := strings.Cut(rest, "\n.SH ")
	return section
}

// unroff is troff as the words it prints: headings with the colon the
// help gives them, escapes undone, requests dropped.
func unroff(section string) string {
	var b strings.Builder
	undo := strings.NewReplacer(`\fB`, "", `\fR`, "", `\-`, "-", `\e`, `\`, `\&`, "")
	for line := range strings.Lines(section) {
		if h, ok := strings.CutPrefix(line, ".SS "); ok {
			line = strings.Trim(strings.TrimSpace(h), `"`) + ":\n"
		} else if strings.HasPrefix(line, ".") {
			continue
		}
		b.WriteString(undo.Replace(line))
	}
	return b.String()
}

// TestManPageIsTheHelp: run's and status's sections of the page say the
// help's words, all of them and in order, with or without a backend; the
// NAME and DESCRIPTION say the overview's.
func TestManPageIsTheHelp(t *testing.T) {
	for _, backends := range [][]Backend{nil, {&fakeBackend{}}} {
		page := manPage(backends)
		for title, help := range map[string]string{
			`"PROCLOCK RUN"`:    runHelp(backends),
			`"PROCLOCK STATUS"`: statusHelp(backends),
			"DESCRIPTION":       usageText[strings.Index(usageText, "\n\nKeep"):],
		} {
			got, want := strings.Fields(unroff(manSection(t, page, title))), strings.Fields(help)
			for i := range min(len(got), len(want)) {
				if got[i] != want[i] {
					t.Fatalf("%d backends: the page's %s says %q at word %d, where the help says %q:\n%s",
						len(backends), title, strings.Join(got[max(0, i-5):i+1], " "), i, strings.Join(want[max(0, i-5):i+1], " "), unroff(manSection(t, page, title)))
				}
			}
			if len(got) != len(want) {
				t.Errorf("%d backends: the page's %s has %d words, the help %d", len(backends), title, len(got), len(want))
			}
		}
	}
}

// manTerms are the options and codes that the page's tagged paragraphs
// (.TP) name.
func manTerms(page string) map[string]bool {
	terms := map[string]bool{}
	lines := strings.Split(page, "\n")
	for i, l := range lines {
		if l != ".TP" || i+1 == len(lines) {
			continue
		}
		term := strings.NewReplacer(`\fB`, "", `\fR`, "", `\-`, "-", ",", "").Replace(lines[i+1])
		for _, w := range strings.Fields(term) {
			terms[w] = true
		}
	}
	return terms
}

// TestManPageTerms: each option the parsers take is a term of the page
// of its own (an option of the page's list, not only a word in its
// text), a backend's too; the host-only page has none of the codes that
// only a backend gives.
func TestManPageTerms(t *testing.T) {
	for _, backends := range [][]Backend{nil, {&fakeBackend{}}} {
		terms := manTerms(manPage(backends))
		run, status := optionTables(backends)
		for _, o := range append(run, status...) {
			for _, name := range o.names {
				if !o.refused && !terms[name] {
					t.Errorf("%d backends: the man page lists no option %s", len(backends), name)
				}
			}
		}
		for _, code := range []string{"123", "124"} {
			if terms[code] != (len(backends) > 0) {
				t.Errorf("%d backends: exit code %s listed: %v", len(backends), code, terms[code])
			}
		}
	}
}

// TestManPageRenders: groff reads docs/proclock.1 without a warning.
func TestManPageRenders(t *testing.T) {
	groff, err := exec.LookPath("groff")
	if err != nil {
		t.Skip("groff is not installed: the page's troff is not checked")
	}
	cmd := exec.Command(groff, "-man", "-ww", "-z", "-Tutf8")
	cmd.Stdin = strings.NewReader(readDoc(t, "docs/proclock.1"))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil || stderr.Len() > 0 {
		t.Errorf("groff -man -ww on docs/proclock.1: %v\n%s", err, stderr.String())
	}
}
