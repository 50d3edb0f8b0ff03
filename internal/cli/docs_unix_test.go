//go:build unix

package cli

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// section is the text of the section of doc that starts with the line
// heading, up to the next heading of that level.
func section(t *testing.T, doc, heading string) string {
	t.Helper()
	_, after, found := strings.Cut(doc, "\n"+heading+"\n")
	if !found {
		t.Fatalf("no section %q", heading)
	}
	level := heading[:strings.Index(heading, " ")+1]
	if i := strings.Index(after, "\n"+level); i >= 0 {
		after = after[:i]
	}
	return after
}

// words splits a shell line as sh would for these docs' lines: fields,
// with '...' and "..." quoting.
func words(line string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, rune(0)
	for _, c := range line {
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteRune(c)
		case c == '\'' || c == '"':
			quote, in = c, true
		case c == ' ':
			if in {
				out = append(out, cur.String())
				cur.Reset()
			}
			in = false
		default:
			cur.WriteRune(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}

// TestRefusedForms: each row of docs/command.md's "Refused forms" is what
// the command does: the line as converted from flock(1) is refused (exit
// 2, one line) with the words the row quotes, and the line to write
// instead runs COMMAND. FILE, DIR, "$0" and CMD stand for a lock path, a
// directory, a script and true.
func TestRefusedForms(t *testing.T) {
	text := section(t, readDoc(t, "docs/command.md"), "## Refused forms")
	rows := 0
	for l := range strings.Lines(text) {
		cols := strings.Split(l, "|")
		if len(cols) != 6 || !strings.Contains(cols[2], "`proclock run") {
			continue
		}
		rows++
		refused, fix := codeSpan.FindStringSubmatch(cols[2]), codeSpan.FindStringSubmatch(cols[4])
		says := strings.Trim(strings.TrimSpace(cols[3]), `"`)
		if refused == nil || fix == nil || says == "" {
			t.Errorf("row %q: want the line as converted, the words quoted, the line to write", l)
			continue
		}
		t.Run(strconv.Itoa(rows), func(t *testing.T) {
			t.Logf("%s", cols[1])
			dir := t.TempDir()
			script := filepath.Join(dir, "job.sh")
			if err := os.WriteFile(script, []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			file, target := filepath.Join(dir, "x.lock"), filepath.Join(dir, "target.lock")
			if strings.Contains(cols[1], "symlink") {
				if err := os.Symlink(target, file); err != nil {
					t.Fatal(err)
				}
			}
			stand := strings.NewReplacer("FILE", file, "DIR", mkdir(t, filepath.Join(dir, "d")), "$0", script,
				"CMD", "true", "TARGET", target)
			line := func(code string) []string {
				w := words(code)[2:] // after "proclock run"
				for i, s := range w {
					w[i] = stand.Replace(s)
				}
				return append([]string{"run"}, w...)
			}
			res := runProclock(t, line(refused[1])...)
			if res.code != exitUsage || !strings.Contains(res.stderr, says) {
				t.Errorf("proclock %q: exit %d, %q; want exit 2 and %q", line(refused[1]), res.code, res.stderr, says)
			}
			oneLine(t, "stderr", res.stderr)
			if res := runProclock(t, line(fix[1])...); res.code != 0 {
				t.Errorf("proclock %q (written instead): exit %d, %q; want it to run", line(fix[1]), res.code, res.stderr)
			}
		})
	}
	if rows < 8 {
		t.Fatalf("found %d rows in docs/command.md's refused forms; want the table", rows)
	}
}

// TestRefusedIdiom runs the script docs/command.md gives for flock(1)'s
// idiom of locking the script itself: it runs its work under the lock
// beside it, and gives up (exit 1, saying who holds it) while that is held.
func TestRefusedIdiom(t *testing.T) {
	text := section(t, readDoc(t, "docs/command.md"), "## Refused forms")
	_, block, _ := strings.Cut(text, "```sh\n")
	block, _, _ = strings.Cut(block, "```")
	if !strings.Contains(block, "proclock run") {
		t.Fatalf("no script in docs/command.md's refused forms: %q", block)
	}
	script := filepath.Join(t.TempDir(), "job.sh")
	if err := os.WriteFile(script, []byte(block+"echo work done\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	runScript := func() result {
		cmd := exec.Command(script)
		cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
		cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		cmd.Run()
		return result{code: cmd.ProcessState.ExitCode(), stdout: stdout.String(), stderr: stderr.String()}
	}
	if res := runScript(); res.code != 0 || res.stdout != "work done\n" {
		t.Errorf("the script: exit %d, %q, %q; want its work done once", res.code, res.stdout, res.stderr)
	}
	holder := holdLock(t, "run", script+".lock")
	if res := runScript(); res.code != 1 || res.stdout != "" || !strings.Contains(res.stderr, " is held by pid ") {
		t.Errorf("the script, its lock held: exit %d, %q, %q; want exit 1 and who holds it", res.code, res.stdout, res.stderr)
	}
	holder.release()
}

// TestSignalNamesDocumented: the signals `proclock help run` and
// docs/command.md list as passed on are the ones the code passes on.
func TestSignalNamesDocumented(t *testing.T) {
	var want []string
	for _, sig := range append(slices.Clone(relayed), passedOn...) {
		want = append(want, unix.SignalName(sig.(syscall.Signal)))
	}
	for name, text := range map[string]string{"proclock help run": runUsage, "docs/command.md": readDoc(t, "docs/command.md")} {
		var got []string
		for l := range strings.Lines(text) {
			if list, ok := strings.CutPrefix(strings.TrimSpace(l), "passed on: "); ok {
				got = strings.Split(list, ", ")
			}
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s says %q are passed on; the code passes on %q", name, got, want)
		}
	}
}

// TestSymlinkClaimDocumented: what docs/security.md ("Symlinks") says of a
// symlink at the lock's path is what the command does, on both
// mechanisms: refused at once as not a lock file, however old, kept, the
// file a dangling one names never created, and the line saying it is a
// dangling symlink.
func TestSymlinkClaimDocumented(t *testing.T) {
	text := section(t, readDoc(t, "docs/security.md"), "## Symlinks")
	for _, claim := range []string{"refuse the link at once as not a lock file", "and keep it", "never creates the file a dangling link names"} {
		if !strings.Contains(strings.Join(strings.Fields(text), " "), claim) {
			t.Errorf("docs/security.md's Symlinks no longer says %q; this test holds the code to it", claim)
		}
	}
	for _, mech := range mechanisms {
		dir := t.TempDir()
		path, target := filepath.Join(dir, "x.lock"), filepath.Join(dir, "victim")
		if err := os.Symlink(target, path); err != nil {
			t.Fatal(err)
		}
		old := time.Now().Add(-time.Hour) // past every window
		if err := unix.Lutimes(path, []unix.Timeval{unix.NsecToTimeval(old.UnixNano()), unix.NsecToTimeval(old.UnixNano())}); err != nil {
			t.Fatal(err)
		}
		res := runProclock(t, "run", "-n", "--mechanism", mech, path, "--", "true")
		if res.code != exitUsage || !strings.Contains(res.stderr, "not a lock file") || !strings.Contains(res.stderr, "it is a dangling symlink") {
			t.Errorf("%s: run on an old dangling symlink: exit %d, %q; want exit 2, not a lock file, a dangling symlink", mech, res.code, res.stderr)
		}
		if info, err := os.Lstat(path); err != nil || info.Mode()&os.ModeSymlink == 0 {
			t.Errorf("%s: the symlink is gone: %v, %v", mech, info, err)
		}
		if _, err := os.Lstat(target); err == nil {
			t.Errorf("%s: the file the symlink names was created", mech)
		}
	}
}
