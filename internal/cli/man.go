package cli

import (
	"fmt"
	"strings"
	"unicode"
)

// proclock(1) is the help made into troff, with nothing written for it
// alone, so that "proclock help" and the man page cannot disagree:
// "proclock help --man" prints it for the command's own backends, and
// docs/proclock.1 is the host-only command's (go generate ./cmd/proclock;
// TestManPageCurrent fails when it is out of date).

// manHeader starts the page; it has no date, so that the same help
// always makes the same page.
const manHeader = `.\" proclock(1), made by "proclock help --man" from the command's help:
.\" edit the help (internal/cli), then run go generate ./cmd/proclock.
.TH PROCLOCK 1 "" proclock "User Commands"
.nh
.ad l
`

// manPage is proclock(1) for a command with backends: the overview as
// NAME, SYNOPSIS and DESCRIPTION, then run's and status's help.
func manPage(backends []Backend) string {
	run, status := optionTables(backends)
	isOption := map[string]bool{}
	for _, o := range append(run, status...) {
		for _, n := range o.names {
			isOption[n] = true
		}
	}
	summary, rest, _ := strings.Cut(usageText, "\n\n")
	synopsis, rest, _ := strings.Cut(rest, "\n\n")
	var b strings.Builder
	b.WriteString(manHeader)
	fmt.Fprintf(&b, ".SH NAME\nproclock \\- %s\n", roffEscape(strings.TrimSuffix(strings.TrimPrefix(summary, "proclock "), ".")))
	b.WriteString(".SH SYNOPSIS\n.nf\n")
	for _, l := range strings.Split(synopsis, "\n")[1:] { // after "Usage:"
		b.WriteString(roffEscape(strings.TrimSpace(l)) + "\n")
	}
	b.WriteString(".fi\n.SH DESCRIPTION\n")
	b.WriteString(troff(rest, isOption))
	b.WriteString(".SH \"PROCLOCK RUN\"\n" + troff(runHelp(backends), isOption))
	b.WriteString(".SH \"PROCLOCK STATUS\"\n" + troff(statusHelp(backends), isOption))
	b.WriteString(".SH \"SEE ALSO\"\nflock(1)\n")
	return b.String()
}

// troff is help text as troff: each paragraph filled; "Heading:" alone
// on a line before an indented block a subsection; an indented list of
// terms and what they mean (options, exit codes, states) tagged
// paragraphs; any other indented block (examples) as it is.
func troff(text string, isOption map[string]bool) string {
	m := manWriter{isOption: isOption}
	for _, p := range strings.Split(strings.TrimRight(text, "\n"), "\n\n") {
		m.paragraph(strings.Split(p, "\n"))
	}
	return m.b.String()
}

// manWriter writes troff for troff.
type manWriter struct {
	b        strings.Builder
	isOption map[string]bool
	// filling: in a paragraph of text, where a line of text goes on;
	// otherwise the next one starts a paragraph (.PP).
	filling bool
}

// paragraph writes one paragraph of the help, given as its lines.
func (m *manWriter) paragraph(lines []string) {
	m.filling = false
	if strings.HasPrefix(lines[0], "Usage:") {
		m.verbatim(lines)
		return
	}
	if h := lines[0]; len(lines) > 1 && strings.HasSuffix(h, ":") && indent(lines[1]) > 0 {
		fmt.Fprintf(&m.b, ".SS \"%s\"\n", roffEscape(strings.TrimSuffix(h, ":")))
		lines = lines[1:]
	}
	for i := 0; i < len(lines); {
		if indent(lines[i]) == 0 {
			m.text(lines[i])
			i++
			continue
		}
		j := i
		for j < len(lines) && indent(lines[j]) > 0 {
			j++
		}
		m.block(lines[i:j])
		i = j
	}
}

// text writes a line of a paragraph's text.
func (m *manWriter) text(l string) {
	if !m.filling {
		m.b.WriteString(".PP\n")
		m.filling = true
	}
	m.b.WriteString(roffEscape(l) + "\n")
}

// block writes indented lines: a list when its first line starts with a
// term and none is an example (a command or a comment), else verbatim.
func (m *manWriter) block(lines []string) {
	m.filling = false
	if !m.isList(lines) {
		m.verbatim(lines)
		return
	}
	// col is where the current term's text starts (-1: on the next
	// line), termIndent where the term does; a term indented more than
	// the first is one of its parts (a JSON field's), set in.
	col, termIndent, nested := 0, 0, false
	for i, l := range lines {
		ind := indent(l)
		if term, desc, at, ok := m.listTerm(l, i == 0, col, termIndent); ok {
			nested = m.listItem(term, desc, ind > indent(lines[0]), nested)
			col, termIndent = at, ind
			continue
		}
		if col < 0 {
			col = ind
		}
		m.b.WriteString(roffEscape(strings.TrimSpace(l)) + "\n")
	}
	if nested {
		m.b.WriteString(".RE\n")
	}
}

// isList reports whether indented lines are a list: the first starts
// with a term, and none is an example (a command or a comment).
func (m *manWriter) isList(lines []string) bool {
	if _, _, _, ok := m.splitTerm(lines[0]); !ok {
		return false
	}
	for _, l := range lines {
		t := strings.TrimSpace(l)
		if strings.HasPrefix(t, "#") || strings.HasPrefix(t, "proclock ") {
			return false
		}
	}
	return true
}

// listTerm splits line l of a list into the term it starts and what the
// term means (at as splitTerm has it); ok is false when l goes on with
// the text of the term before, which starts at col under a term
// indented termIndent.
func (m *manWriter) listTerm(l string, first bool, col, termIndent int) (term, desc string, at int, ok bool) {
	term, desc, at, ok = m.splitTerm(l)
	if first {
		return term, desc, at, ok
	}
	ind := indent(l)
	if !ok && col > 0 && ind < col && len(l) > col && l[col-1] == ' ' {
		// A term as long as its column, set off by one space.
		term, desc, at, ok = strings.TrimSpace(l[:col]), l[col:], col, true
	}
	if !ok && ind <= termIndent {
		term, desc, at, ok = strings.TrimSpace(l), "", -1, true // a term alone
	}
	// A term starts left of the text before, or where terms start when
	// the text before starts on the next line.
	return term, desc, at, ok && (ind < col || col < 0 && ind <= termIndent)
}

// listItem writes a term of a list and the start of what it means, set
// in when in (a part of the term before) and nested is not yet; it
// returns whether the list is now set in.
func (m *manWriter) listItem(term, desc string, in, nested bool) bool {
	switch {
	case in && !nested:
		m.b.WriteString(".RS\n")
	case !in && nested:
		m.b.WriteString(".RE\n")
	}
	fmt.Fprintf(&m.b, ".TP\n\\fB%s\\fR\n", roffEscape(term))
	if desc != "" {
		m.b.WriteString(roffEscape(desc) + "\n")
	}
	return in
}

// verbatim writes lines as they are, unfilled.
func (m *manWriter) verbatim(lines []string) {
	m.b.WriteString(".PP\n.nf\n")
	for _, l := range lines {
		m.b.WriteString(roffEscape(l) + "\n")
	}
	m.b.WriteString(".fi\n")
	m.filling = false
}

// splitTerm splits an indented line of a list into its term and the
// start of what the term means, which begins at column at (-1 when it
// begins on the next line). A term is an option's spellings with their
// value ("-w, --wait, --timeout T", the parser's names), or what comes
// before two spaces or more ("126, 127    COMMAND cannot ...").
func (m *manWriter) splitTerm(l string) (term, desc string, at int, ok bool) {
	ind := indent(l)
	s := l[ind:]
	if n := m.optionTerm(s); n > 0 {
		term, desc = s[:n], strings.TrimLeft(s[n:], " ")
	} else if k := strings.Index(s, "  "); k > 0 {
		term, desc = s[:k], strings.TrimLeft(s[k:], " ")
	} else {
		return "", "", 0, false
	}
	if desc == "" {
		return term, "", -1, true
	}
	return term, desc, len(l) - len(desc), true
}

// optionTerm is the length of the option spellings that start s, and of
// the value's name after them ("-c, --command 'CMD'"); 0 when s does not
// start with an option the parser knows.
func (m *manWriter) optionTerm(s string) int {
	n := 0
	for {
		word, _, _ := strings.Cut(s[n:], " ")
		name := strings.TrimSuffix(word, ",")
		if !m.isOption[name] {
			return 0
		}
		n += len(word)
		if strings.HasSuffix(word, ",") {
			n++ // the space after the comma
			continue
		}
		// The value's name: capitals, perhaps quoted ("T", "'CMD'").
		if rest := s[n:]; strings.HasPrefix(rest, " ") {
			v, _, _ := strings.Cut(rest[1:], " ")
			if v != "" && strings.Trim(v, "'") != "" && !strings.ContainsFunc(v, unicode.IsLower) && !strings.HasPrefix(v, "-") {
				n += 1 + len(v)
			}
		}
		return n
	}
}

// indent is the number of spaces that start l.
func indent(l string) int {
	return len(l) - len(strings.TrimLeft(l, " "))
}

// roffEscape makes a line of the help safe as troff text: a backslash
// printed as one, a dash a minus (so that options copy as typed), and a
// line that starts with a control character not taken as a request.
func roffEscape(l string) string {
	l = strings.ReplaceAll(l, `\`, `\e`)
	l = strings.ReplaceAll(l, "-", `\-`)
	if strings.HasPrefix(l, ".") || strings.HasPrefix(l, "'") {
		l = `\&` + l
	}
	return l
}
