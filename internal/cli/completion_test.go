package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
)

// completionOf is what "proclock completion SHELL" prints for a command
// with backends, written to a file of its own.
func completionOf(t *testing.T, shell string, backends ...Backend) (script, file string) {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main([]string{"completion", shell}, nil, &out, &errb, backends...); code != exitOK {
		t.Fatalf("completion %s: exit %d, %s", shell, code, errb.String())
	}
	file = filepath.Join(t.TempDir(), "proclock."+shell)
	if err := os.WriteFile(file, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return out.String(), file
}

// accepted are the options that sub ("run" or "status") takes with
// backends: the parser's tables without the refused ones.
func accepted(sub string, backends []Backend) []string {
	run, status := optionTables(backends)
	opts := map[string][]option{"run": run, "status": status}[sub]
	var names []string
	for _, o := range opts {
		if !o.refused {
			names = append(names, o.names...)
		}
	}
	slices.Sort(names)
	return names
}

// scriptWords are the words of a script, fish's "-s n" and "-l name"
// read as the options "-n" and "--name".
func scriptWords(script string) map[string]bool {
	words := map[string]bool{}
	fields := strings.FieldsFunc(script, func(r rune) bool { return strings.ContainsRune(" \t\n'\"()=", r) })
	for i, f := range fields {
		words[f] = true
		if i+1 < len(fields) {
			switch f {
			case "-s", "-o":
				words["-"+fields[i+1]] = true
			case "-l":
				words["--"+fields[i+1]] = true
			}
		}
	}
	return words
}

// TestCompletionListsEveryOption: each script, of each shell, names every
// option that run and status take, a backend's too, and none of the
// refused ones, and each it names the parser knows; an option added to a
// table is in every script at once.
func TestCompletionListsEveryOption(t *testing.T) {
	for _, backends := range [][]Backend{nil, {&fakeBackend{}}} {
		for _, shell := range shellWords {
			script, _ := completionOf(t, shell, backends...)
			words := scriptWords(script)
			for _, sub := range []string{"run", "status"} {
				for _, name := range accepted(sub, backends) {
					if !words[name] {
						t.Errorf("%s, %d backends: the script does not name %s's option %s", shell, len(backends), sub, name)
					}
				}
			}
			for _, name := range accepted("run", backends) {
				var x runExtra
				if _, err := parseRunArgsWith([]string{name, "5", "x.lock", "--", "true"}, x.options(backends)); unknown(err) {
					t.Errorf("the scripts offer %s; proclock run does not know it: %v", name, err)
				}
			}
			for _, name := range accepted("status", backends) {
				var x runExtra
				if _, err := parseStatusArgsWith([]string{name, "auto", "x.lock"}, x.backendOptions(backends)); unknown(err) {
					t.Errorf("the scripts offer %s; proclock status does not know it: %v", name, err)
				}
			}
			for _, name := range []string{"--shared", "--unlock", "--no-fork"} {
				if words[name] {
					t.Errorf("%s: the script offers %s, which run refuses", shell, name)
				}
			}
		}
	}
}

// shellQuery is what shell's script (in file) offers for the words of a
// command line, the last the word being completed: bash's function
// called as bash-completion calls it, zsh's with its builtins stood in
// for (compadd filters by the prefix, as zsh does), fish's own
// complete -C.
func shellQuery(t *testing.T, shell, file string, words ...string) []string {
	t.Helper()
	var cmd *exec.Cmd
	switch shell {
	case "bash":
		cmd = exec.Command("bash", "-c", `source "$1" && COMP_WORDS=("${@:2}") && COMP_CWORD=$((${#COMP_WORDS[@]} - 1)) &&
			_proclock && printf '%s\n' "${COMPREPLY[@]}"`, "bash", file)
	case "zsh":
		cmd = exec.Command("zsh", "-fc", `compdef() {}; compadd() { shift; local w; for w; do [[ $w == "$PREFIX"* ]] && print -r -- $w; done; true }; _files() { print FILES }
			_normal() { print NORMAL }; source "$1" && shift && words=("$@") && CURRENT=$# && PREFIX=$words[-1] && _proclock`, "zsh", file)
	default:
		cmd = exec.Command("fish", "-c", `source $argv[1]; and complete -C (string join ' ' -- $argv[2..-1])`, file)
	}
	cmd.Args = append(cmd.Args, words...)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s completing %q: %v\n%s", shell, words, err, out)
	}
	var got []string
	for line := range strings.Lines(string(out)) {
		if w, _, _ := strings.Cut(strings.TrimSpace(line), "\t"); w != "" && !slices.Contains(got, w) {
			got = append(got, w)
		}
	}
	slices.Sort(got)
	return got
}

// TestCompletionScriptsLoad: where the shell is installed, its script
// loads without error and registers proclock's completion, and what it
// offers for an option is every option the parser takes, no more, for
// --mechanism its values, and for the first word the subcommands.
func TestCompletionScriptsLoad(t *testing.T) {
	load := map[string][]string{
		"bash": {"bash", "-c", `source "$1" && complete -p proclock`, "bash"},
		"zsh":  {"zsh", "-fc", `autoload -Uz compinit && compinit -D -u && source "$1" && [[ $_comps[proclock] == _proclock ]]`, "zsh"},
		"fish": {"fish", "-c", `source $argv[1]; and complete -c proclock | string match -q '*'`},
	}
	syntax := map[string][]string{"bash": {"bash", "-n"}, "zsh": {"zsh", "-n"}, "fish": {"fish", "-n"}}
	for _, shell := range shellWords {
		t.Run(shell, func(t *testing.T) {
			if runtime.GOOS == "windows" {
				t.Skip("the scripts are for unix shells; windows's bash, if any, takes other paths")
			}
			if _, err := exec.LookPath(shell); err != nil {
				t.Skipf("%s is not installed: its script is checked only for the options it names", shell)
			}
			backends := []Backend{&fakeBackend{}}
			_, file := completionOf(t, shell, backends...)
			for _, args := range [][]string{append(syntax[shell], file), append(load[shell], file)} {
				if out, err := exec.Command(args[0], args[1:]...).CombinedOutput(); err != nil {
					t.Fatalf("%q: %v\n%s", args, err, out)
				}
			}
			for _, sub := range []string{"run", "status"} {
				want := accepted(sub, backends)
				got := slices.DeleteFunc(shellQuery(t, shell, file, "proclock", sub, "-"), func(w string) bool { return !strings.HasPrefix(w, "-") })
				if !slices.Equal(got, want) {
					t.Errorf("proclock %s -<TAB> offers %q; the parser takes %q", sub, got, want)
				}
			}
			if got := shellQuery(t, shell, file, "proclock", "run", "--mechanism", ""); !slices.Equal(got, []string{"auto", "file", "sqlite"}) {
				t.Errorf("proclock run --mechanism <TAB> offers %q; want auto, file, sqlite", got)
			}
			if got := shellQuery(t, shell, file, "proclock", "st"); !slices.Equal(got, []string{"status"}) {
				t.Errorf("proclock st<TAB> offers %q; want status", got)
			}
		})
	}
}

// TestCompletionRefused: no shell, or another shell's name, is a usage
// error that names the shells there are.
func TestCompletionRefused(t *testing.T) {
	if _, err := completionScript("tcsh", nil); !errors.Is(err, errNoShell) {
		t.Errorf("completion tcsh: %v; want errNoShell", err)
	}
	for _, args := range [][]string{{"completion"}, {"completion", "tcsh"}, {"completion", "bash", "zsh"}} {
		var out, errb bytes.Buffer
		if code := Main(args, nil, &out, &errb); code != exitUsage || out.Len() > 0 || !strings.Contains(errb.String(), "bash, zsh or fish") {
			t.Errorf("%q: exit %d, %q, %q; want exit 2 naming the shells", args, code, out.String(), errb.String())
		}
	}
}
