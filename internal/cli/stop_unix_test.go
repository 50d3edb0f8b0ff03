//go:build unix

package cli

import (
	"os"
	"os/exec"
	"syscall"
	"testing"
	"time"
)

// groupOf starts args in a process group of its own and returns its pid,
// which is the group's id.
func groupOf(t *testing.T, args ...string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(args[0], args[1:]...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	return cmd
}

// TestLossStopEmptyGroupNoWait: after a loss by an event (a revoke, a
// del), COMMAND dead of its SIGTERM and nothing left of its group, finish
// returns at once, not when SIGKILL would be due. Issue 29's code slept
// out the grace: 6 s after COMMAND's death at TTL 30 s; an hour here.
func TestLossStopEmptyGroupNoWait(t *testing.T) {
	cmd := groupOf(t, "true")
	cmd.Wait() // the group's one process is gone
	lock := &renewedLate{deadlines: []time.Time{{}}, lost: make(chan struct{})}
	close(lock.lost)
	relay := make(chan os.Signal, 2)
	s := startLossStop(lock, time.Hour, relay)
	if sig := <-relay; sig != syscall.SIGTERM {
		t.Fatalf("first signal %v, want SIGTERM", sig)
	}
	began := time.Now()
	done := make(chan string, 1)
	go func() { why, _ := s.finish(cmd.Process.Pid); done <- why }()
	select {
	case why := <-done:
		t.Logf("finish returned %v after COMMAND's end", time.Since(began))
		if why == "" {
			t.Error("finish tells no cause for the stop")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("finish still waits 10 s after COMMAND's group emptied, with an hour's grace to go")
	}
}

// TestLossStopKillsLeftover: a process of COMMAND's group that outlived
// COMMAND still gets SIGKILL when it is due.
func TestLossStopKillsLeftover(t *testing.T) {
	cmd := groupOf(t, "sleep", "1000")
	lock := &renewedLate{deadlines: []time.Time{{}}, lost: make(chan struct{})}
	close(lock.lost)
	relay := make(chan os.Signal, 2)
	s := startLossStop(lock, 200*time.Millisecond, relay)
	if sig := <-relay; sig != syscall.SIGTERM { // not passed on: the sleep runs on
		t.Fatalf("first signal %v, want SIGTERM", sig)
	}
	s.finish(cmd.Process.Pid)
	cmd.Wait()
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
		t.Errorf("the group's leftover ended %v; want killed by SIGKILL", cmd.ProcessState)
	}
}
