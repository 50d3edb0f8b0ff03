package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestRunKilledGuardKeepsLock: COMMAND's guard killed first, then
// `proclock run` killed with SIGKILL: nothing is left to kill the job,
// and a child of COMMAND's that lives on keeps descriptor 3, whose kernel
// locks keep every native taker out: `run -n` is refused (held, on either
// mechanism) until the child has exited, then succeeds. proclock warns
// when its guard ends. On both mechanisms, a path's first and second run.
func TestRunKilledGuardKeepsLock(t *testing.T) {
	for _, holder := range mechanisms {
		for _, taker := range mechanisms {
			for _, second := range []bool{false, true} {
				name := holder + " holds, " + taker + " takes"
				if second {
					name += ", second run"
				}
				t.Run(name, func(t *testing.T) {
					if taker == "file" {
						skipUnlessFileSeesFlock(t)
					}
					t.Parallel()
					lock := filepath.Join(t.TempDir(), "x.lock")
					if second {
						if res := runProclock(t, line("run", "--mechanism", holder, lock, "--", "true")...); res.code != 0 {
							t.Fatalf("first run: exit %d; stderr: %s", res.code, res.stderr)
						}
					}
					r := startProclock(t, line("run", "--mechanism", holder, lock, jobScript(true))...)
					child := r.readPID()
					killAndAwait(t, guardOf(t, r.cmd.Process.Pid))
					r.awaitStderr("COMMAND's guard ended")
					r.cmd.Process.Signal(syscall.SIGKILL)
					r.wait()

					next := line("run", "-n", "--mechanism", taker, lock, "--", "true")
					if res := runProclock(t, next...); res.code != 1 {
						t.Fatalf("run -n beside the job's live child, guard and proclock killed: exit %d, want 1 (held); stderr: %s", res.code, res.stderr)
					}
					killAndAwait(t, child)
					if res := runProclock(t, next...); res.code != 0 {
						t.Fatalf("run -n once the child exited: exit %d, want 0; stderr: %s", res.code, res.stderr)
					}
				})
			}
		}
	}
}

// guardOf finds the guard of the run whose proclock is pid: the process
// running proclock's guard mode that holds a pidfd of that run's COMMAND
// (its fdinfo names the pid). It waits for the guard to be given the
// pidfd, which comes just after COMMAND starts.
func guardOf(t *testing.T, pid int) int {
	t.Helper()
	for end := time.Now().Add(deadline); time.Now().Before(end); {
		// Each thread's children: Go forks from any of its threads.
		tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
		var children []byte
		for _, task := range tasks {
			b, _ := os.ReadFile(task)
			children = append(children, b...)
		}
		for _, command := range strings.Fields(string(children)) {
			if g := guardHolding(command); g != 0 {
				return g
			}
		}
		runtime.Gosched()
	}
	t.Fatalf("no guard holds a pidfd of proclock %d's COMMAND", pid)
	return 0
}

// guardHolding is the pid of the guard process that holds a pidfd of
// pid (a decimal string), or 0.
func guardHolding(pid string) int {
	procs, _ := os.ReadDir("/proc")
	for _, p := range procs {
		cmdline, err := os.ReadFile(filepath.Join("/proc", p.Name(), "cmdline"))
		if err != nil || !bytes.Contains(cmdline, []byte(guardArg)) {
			continue
		}
		fds, _ := os.ReadDir(filepath.Join("/proc", p.Name(), "fdinfo"))
		for _, fd := range fds {
			info, _ := os.ReadFile(filepath.Join("/proc", p.Name(), "fdinfo", fd.Name()))
			if bytes.Contains(info, []byte("\nPid:\t"+pid+"\n")) {
				n, _ := strconv.Atoi(p.Name())
				return n
			}
		}
	}
	return 0
}

// awaitStderr waits until proclock's stderr says want.
func (r *running) awaitStderr(want string) {
	r.t.Helper()
	for end := time.Now().Add(deadline); time.Now().Before(end); {
		if strings.Contains(r.readStderr(), want) {
			return
		}
		runtime.Gosched()
	}
	r.t.Fatalf("proclock's stderr never said %q: %s", want, r.readStderr())
}
