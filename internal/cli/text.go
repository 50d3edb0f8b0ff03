package cli

import (
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
)

// printable is s with its control characters escaped as Go writes them
// (\x1b, \n): a host name, a path or an error that a stamp or a user
// wrote reaches the terminal as text, never as a sequence that clears the
// screen or starts a line of its own. Every text printer passes what it
// did not write itself through here (sprintf, complain); --json's
// encoder escapes on its own.
func printable(s string) string {
	if !strings.ContainsFunc(s, unicode.IsControl) {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		if !unicode.IsControl(r) {
			b.WriteRune(r)
			continue
		}
		q := strconv.QuoteRune(r) // '\x1b'
		b.WriteString(q[1 : len(q)-1])
	}
	return b.String()
}

// sprintf is fmt.Sprintf with each string, error and Stringer argument
// made printable: the format, the program's own text, keeps its newlines.
func sprintf(format string, args ...any) string {
	clean := make([]any, len(args))
	for i, a := range args {
		switch a := a.(type) {
		case string:
			clean[i] = printable(a)
		case error:
			clean[i] = printable(a.Error())
		case fmt.Stringer:
			clean[i] = printable(a.String())
		default:
			clean[i] = a
		}
	}
	return fmt.Sprintf(format, clean...)
}

// fprintf is sprintf, written to w.
func fprintf(w io.Writer, format string, args ...any) {
	io.WriteString(w, sprintf(format, args...))
}
