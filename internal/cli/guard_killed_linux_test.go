package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"
)

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
