package cli

import (
	"errors"
	"fmt"
	"regexp"
	"strings"
)

// "proclock completion bash|zsh|fish" prints a completion script made from
// the option tables the parser takes (optionTables), the backends' options
// included, so that a new option is completed without anyone editing a
// script (TestCompletion* hold each script to the parser).

// completionWords are what a script offers for one subcommand.
type completionWords struct {
	switches []string            // options without a value
	valued   []string            // options that take one
	choices  map[string][]string // an option's values, when they are few
	groups   [][]string          // each option's spellings together
}

// plainWord is what a script may carry unquoted: an option or a value
// made of letters, digits and dashes.
var plainWord = regexp.MustCompile(`^-{0,2}[A-Za-z0-9][-A-Za-z0-9]*$`)

// wordsOf are the words of opts, without the refused ones; a name that a
// script could not carry as it is (a backend's) is an error.
func wordsOf(opts []option) (completionWords, error) {
	w := completionWords{choices: map[string][]string{}}
	for _, o := range opts {
		if o.refused {
			continue
		}
		for _, s := range append(append([]string(nil), o.names...), o.choices...) {
			if !plainWord.MatchString(s) {
				return w, fmt.Errorf("proclock completion: option or value %q is not one a script can carry", s)
			}
		}
		w.groups = append(w.groups, o.names)
		if o.value == "" {
			w.switches = append(w.switches, o.names...)
			continue
		}
		w.valued = append(w.valued, o.names...)
		for _, n := range o.names {
			if len(o.choices) > 0 {
				w.choices[n] = o.choices
			}
		}
	}
	return w, nil
}

// topWords are what the command's first word may be.
var topWords = []string{"run", "status", "help", "completion", "-h", "--help", "-V", "--version"}

// helpWords and shellWords are what "help" and "completion" take.
var (
	helpWords  = []string{"run", "status", "--man"}
	shellWords = []string{"bash", "zsh", "fish"}
)

// completionMain is proclock completion SHELL.
func completionMain(args []string, std streams) int {
	if len(args) != 1 {
		fmt.Fprint(std.err, "proclock completion: name one shell: bash, zsh or fish\n")
		return exitUsage
	}
	script, err := completionScript(args[0], std.backends)
	if err != nil {
		complain(std.err, err)
		return exitUsage
	}
	fmt.Fprint(std.out, script)
	return exitOK
}

// errNoShell is completionScript's error for a shell it has no script for.
var errNoShell = errors.New("no completion script for this shell; bash, zsh or fish")

// completionScript is shell's completion script for a command with
// backends.
func completionScript(shell string, backends []Backend) (string, error) {
	runOpts, statusOpts := optionTables(backends)
	run, err := wordsOf(runOpts)
	if err != nil {
		return "", err
	}
	status, err := wordsOf(statusOpts)
	if err != nil {
		return "", err
	}
	switch shell {
	case "bash":
		return bashCompletion(run, status), nil
	case "zsh":
		return zshCompletion(run, status), nil
	case "fish":
		return fishCompletion(run, status), nil
	}
	return "", fmt.Errorf("proclock completion: %q: %w", shell, errNoShell)
}

// choiceArms are the arms of a shell's case on the option before the
// word completed: each option with choices, and what offers them (the
// choices joined with spaces in place of %s).
func choiceArms(w completionWords, sep, offer, end string) string {
	var b strings.Builder
	for _, g := range w.groups {
		if c := w.choices[g[0]]; len(c) > 0 {
			fmt.Fprintf(&b, "\t\t%s) %s %s\n", strings.Join(g, sep), fmt.Sprintf(offer, strings.Join(c, " ")), end)
		}
	}
	return b.String()
}
