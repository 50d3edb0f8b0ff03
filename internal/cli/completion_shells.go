package cli

import (
	"fmt"
	"slices"
	"strings"
)

// The scripts below are templates whose @WORDS@ the option tables fill
// in (completion.go); each completes the subcommand, its options, the
// values of an option that has few, PATH as a file, and after run's
// "--" COMMAND as a command line of its own.

const bashTemplate = `# bash completion for proclock, made by "proclock completion bash" from
# the options proclock takes. Load it from ~/.bashrc, or install it as
# bash-completion's proclock.
_proclock() {
	local cur=${COMP_WORDS[COMP_CWORD]} prev=${COMP_WORDS[COMP_CWORD-1]}
	local i opts values
	if ((COMP_CWORD == 1)); then
		mapfile -t COMPREPLY < <(compgen -W '@TOP@' -- "$cur")
		return
	fi
	case ${COMP_WORDS[1]} in
	run) opts='@RUN@' values=' @RUNVALUED@ ' ;;
	status) opts='@STATUS@' values=' @STATUSVALUED@ ' ;;
	help | completion)
		if ((COMP_CWORD == 2)); then
			[[ ${COMP_WORDS[1]} == help ]] && opts='@HELP@' || opts='@SHELLS@'
			mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
		fi
		return
		;;
	*) return ;;
	esac
	for ((i = 2; i < COMP_CWORD; i++)); do
		if [[ ${COMP_WORDS[i]} == -- ]]; then
			# COMMAND: completed as a command line of its own, by
			# bash-completion's helper where it is loaded.
			if declare -F _command_offset >/dev/null; then
				_command_offset $((i + 1))
			elif ((i + 1 == COMP_CWORD)); then
				mapfile -t COMPREPLY < <(compgen -c -- "$cur")
			else
				compopt -o filenames 2>/dev/null
				mapfile -t COMPREPLY < <(compgen -f -- "$cur")
			fi
			return
		fi
	done
	if [[ $values == *" $prev "* ]]; then
		case $prev in
@BASHCHOICES@		esac
		return
	fi
	if [[ $cur == -* ]]; then
		mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
	else
		compopt -o filenames 2>/dev/null
		mapfile -t COMPREPLY < <(compgen -f -- "$cur")
	fi
}
complete -F _proclock proclock
`

// bashCompletion is the bash script for run's and status's words.
func bashCompletion(run, status completionWords) string {
	return fillScript(bashTemplate, run, status, "@BASHCHOICES@", `mapfile -t COMPREPLY < <(compgen -W '%s' -- "$cur")`)
}

// fillScript puts run's and status's words into a shell's template; the
// value choices go at choices, each offered by offer.
func fillScript(template string, run, status completionWords, choices, offer string) string {
	return strings.NewReplacer(
		"@TOP@", strings.Join(topWords, " "),
		"@RUN@", strings.Join(slices.Concat(run.switches, run.valued), " "),
		"@RUNVALUED@", strings.Join(run.valued, " "),
		"@STATUS@", strings.Join(slices.Concat(status.switches, status.valued), " "),
		"@STATUSVALUED@", strings.Join(status.valued, " "),
		"@HELP@", strings.Join(helpWords, " "),
		"@SHELLS@", strings.Join(shellWords, " "),
		choices, choiceArms(run, " | ", offer, ";;")+choiceArms(status, " | ", offer, ";;"),
	).Replace(template)
}

const zshTemplate = `#compdef proclock
# zsh completion for proclock, made by "proclock completion zsh" from the
# options proclock takes. Install it as _proclock in a directory of
# $fpath, or source it after compinit.
_proclock() {
	local -a opts values
	local i
	if ((CURRENT == 2)); then
		compadd -- @TOP@
		return
	fi
	case $words[2] in
	run) opts=(@RUN@) values=(@RUNVALUED@) ;;
	status) opts=(@STATUS@) values=(@STATUSVALUED@) ;;
	help) ((CURRENT == 3)) && compadd -- @HELP@; return ;;
	completion) ((CURRENT == 3)) && compadd -- @SHELLS@; return ;;
	*) return 1 ;;
	esac
	for ((i = 3; i < CURRENT; i++)); do
		if [[ $words[i] == -- ]]; then
			# COMMAND: completed as a command line of its own.
			words=("${(@)words[i+1,-1]}")
			((CURRENT -= i))
			_normal
			return
		fi
	done
	if ((${values[(Ie)$words[CURRENT-1]]})); then
		case $words[CURRENT-1] in
@ZSHCHOICES@		esac
		return
	fi
	if [[ $PREFIX == -* ]]; then
		compadd -- $opts
	else
		_files
	fi
}
# Autoloaded from $fpath, this file is _proclock's body at its first
# call; sourced, it defines _proclock and registers it.
if [[ $funcstack[1] == _proclock ]]; then
	_proclock "$@"
else
	compdef _proclock proclock
fi
`

// zshCompletion is the zsh script for run's and status's words.
func zshCompletion(run, status completionWords) string {
	return fillScript(zshTemplate, run, status, "@ZSHCHOICES@", "compadd -- %s")
}

// fishCompletion is the fish script for run's and status's words: one
// complete line for each option, its spellings together.
func fishCompletion(run, status completionWords) string {
	var b strings.Builder
	b.WriteString(`# fish completion for proclock, made by "proclock completion fish" from
# the options proclock takes. Install it as proclock.fish in
# ~/.config/fish/completions.
complete -c proclock -e
complete -c proclock -f
`)
	fmt.Fprintf(&b, "complete -c proclock -n __fish_use_subcommand -a '%s'\n", strings.Join(topWords[:4], " "))
	fmt.Fprintf(&b, "complete -c proclock -n __fish_use_subcommand -s h -l help\n")
	fmt.Fprintf(&b, "complete -c proclock -n __fish_use_subcommand -s V -l version\n")
	fmt.Fprintf(&b, "complete -c proclock -n '__fish_seen_subcommand_from help' -a '%s'\n", strings.Join(helpWords, " "))
	fmt.Fprintf(&b, "complete -c proclock -n '__fish_seen_subcommand_from completion' -a '%s'\n", strings.Join(shellWords, " "))
	b.WriteString(`# PATH is a file; after run's --, COMMAND a command line of its own.
function __proclock_command
	set -l words (commandline -opc) (commandline -ct)
	set -l at (contains -i -- -- $words); or return 1
	if test (count $words) -eq (math $at + 1)
		__fish_complete_command
		return
	end
	__fish_complete_subcommand --commandline $words[(math $at + 1)..-1]
end
complete -c proclock -n '__fish_seen_subcommand_from run status; and not contains -- -- (commandline -opc)' -F
complete -c proclock -n '__fish_seen_subcommand_from run; and contains -- -- (commandline -opc)' -x -a '(__proclock_command)'
`)
	for _, sub := range []struct {
		name  string
		words completionWords
	}{{"run", run}, {"status", status}} {
		for _, g := range sub.words.groups {
			fmt.Fprintf(&b, "complete -c proclock -n '__fish_seen_subcommand_from %s; and not contains -- -- (commandline -opc)'%s\n",
				sub.name, fishOption(g, sub.words))
		}
	}
	return b.String()
}

// fishOption is what a fish complete line says of one option: its
// spellings, and whether it takes a value, of which choices.
func fishOption(names []string, w completionWords) string {
	var b strings.Builder
	for _, n := range names {
		switch {
		case strings.HasPrefix(n, "--"):
			b.WriteString(" -l " + n[2:])
		case len(n) == 2:
			b.WriteString(" -s " + n[1:])
		default:
			b.WriteString(" -o " + n[1:]) // one dash, a long name
		}
	}
	switch c := w.choices[names[0]]; {
	case len(c) > 0:
		fmt.Fprintf(&b, " -x -a '%s'", strings.Join(c, " "))
	case slices.Contains(w.valued, names[0]):
		b.WriteString(" -r")
	}
	return b.String()
}
