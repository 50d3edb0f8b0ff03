package cli

import (
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

var (
	hookedOnce sync.Once
	hookedBin  string
	hookedErr  error
)

// hookedBinary is proclock built with the proclockhooks tag (pauseAt),
// beside the test's binary, once.
func hookedBinary(t *testing.T) string {
	t.Helper()
	if os.Getenv(binaryEnv) != "" {
		t.Skip("a prebuilt binary is tested (" + binaryEnv + "): there is no go command to build the hooked one")
	}
	hookedOnce.Do(func() {
		hookedBin = filepath.Join(filepath.Dir(bin), "proclock-hooked")
		out, err := exec.Command("go", "build", "-tags", "proclockhooks", "-o", hookedBin, "github.com/proclock/proclock/cmd/proclock").CombinedOutput()
		if err != nil {
			hookedErr = &buildError{err, string(out)}
		}
	})
	if hookedErr != nil {
		t.Fatal(hookedErr)
	}
	return hookedBin
}

type buildError struct {
	err error
	out string
}

func (e *buildError) Error() string {
	return "go build -tags proclockhooks: " + e.err.Error() + "\n" + e.out
}

// TestRunKilledAtEachStartStep: a `proclock run` SIGKILLed at each step of
// its start-up (pauseEnv) leaves no process of its job beside the lock's
// next holder. Before COMMAND is created ("launching": the guard still
// starting, the lock not yet taken; "locked"; "armed"), COMMAND never
// runs and the lock is free at once. Once the guard has COMMAND's pidfd
// ("watched"), COMMAND's group dies, a background child included. In the
// instant between COMMAND's creation and the guard's message ("started",
// held open here), COMMAND dies of its parent-death signal; a child it
// started in that instant is not reached by the guard, and keeps the
// lock (its inherited descriptor) until it ends: docs/command.md says so.
func TestRunKilledAtEachStartStep(t *testing.T) {
	hooked := hookedBinary(t)
	for _, step := range []string{"launching", "locked", "armed", "started", "watched"} {
		commandRuns := step == "started" || step == "watched"
		t.Run(step, func(t *testing.T) {
			t.Parallel()
			lock := filepath.Join(t.TempDir(), "x.lock")
			cmd := proclockCmd(line("run", lock, "--", "sh", "-c", `sleep 1000 & echo job $$ $!; exec sleep 1000`))
			cmd.Path, cmd.Args[0] = hooked, hooked
			cmd.Env = append(cmd.Env, pauseEnv+"="+step)
			r := start(t, cmd)
			r.stdout.SetReadDeadline(time.Now().Add(deadline))
			var job, child int
			for paused := false; !paused || (commandRuns && job == 0); {
				got, err := r.lines.ReadString('\n')
				if err != nil {
					t.Fatalf("proclock paused at %s: read %q, %v; stderr: %s", step, got, err, r.readStderr())
				}
				switch f := strings.Fields(got); {
				case strings.TrimSpace(got) == "proclock: at "+step:
					paused = true
				case len(f) == 3 && f[0] == "job" && commandRuns:
					job, _ = strconv.Atoi(f[1])
					child, _ = strconv.Atoi(f[2])
				default:
					t.Fatalf("proclock paused at %s: read %q", step, got)
				}
			}
			var jobDead, childDead <-chan time.Time
			if commandRuns {
				jobDead, childDead = pidExit(t, job), pidExit(t, child)
			}
			r.cmd.Process.Signal(syscall.SIGKILL)
			r.wait()

			if !commandRuns {
				rest, err := io.ReadAll(r.lines)
				if err != nil || len(rest) != 0 {
					t.Fatalf("killed at %s: COMMAND's output %q, %v; want none (COMMAND must not start before the guard is armed)", step, rest, err)
				}
				if res := runProclock(t, "run", "-n", lock, "--", "true"); res.code != 0 {
					t.Fatalf("killed at %s: run -n: exit %d, want 0 (free at once); stderr: %s", step, res.code, res.stderr)
				}
				return
			}
			select {
			case <-jobDead:
			case <-time.After(deadline):
				t.Fatalf("killed at %s: COMMAND %d runs on", step, job)
			}
			if step == "watched" {
				select {
				case <-childDead:
				case <-time.After(deadline):
					t.Fatalf("killed at %s: COMMAND's child %d runs on", step, child)
				}
				if res := runProclock(t, "run", "-w", "20", lock, "--", "true"); res.code != 0 {
					t.Fatalf("killed at %s: the next run: exit %d, want 0; stderr: %s", step, res.code, res.stderr)
				}
				return
			}
			// "started": the child escaped the guard; its descriptor
			// keeps the lock until it ends.
			if res := runProclock(t, "run", "-n", lock, "--", "true"); res.code != 1 {
				t.Fatalf("killed at %s, its child %d alive: run -n: exit %d, want 1 (held by the child's descriptor); stderr: %s", step, child, res.code, res.stderr)
			}
			killAndAwait(t, child)
			if res := runProclock(t, "run", "-n", lock, "--", "true"); res.code != 0 {
				t.Fatalf("killed at %s, its child ended: run -n: exit %d, want 0; stderr: %s", step, res.code, res.stderr)
			}
		})
	}
}
