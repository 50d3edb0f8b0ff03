package cluster

import (
	"bufio"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/proclock/proclock/internal/locktest"
)

// BenchmarkCommandRun: the command's whole run on one embedded member on
// loopback, beside etcdctl's: proclock run etcd://EP/NAME -- true against
// etcdctl lock NAME -- true (connect, lock, run, unlock, exit).
func BenchmarkCommandRun(b *testing.B) {
	tc := startCluster(b, 1)
	ep := tc.endpoints()[0]
	bin, ectl := command(b), etcdctl(b)
	b.Run("proclock-run", func(b *testing.B) {
		for b.Loop() {
			locktest.Output(b, exec.Command(bin, "run", lockURL([]string{ep}, "b/cmd-run"), "--", "true"))
		}
	})
	b.Run("etcdctl-lock", func(b *testing.B) {
		for b.Loop() {
			locktest.Output(b, exec.Command(ectl, "--endpoints", ep, "lock", "b/cmd-run-etcdctl", "--", "true"))
		}
	})
}

// BenchmarkCommandKilledHolder: SIGKILL of a holding command (TTL 1 s) to
// the moment a waiting command's COMMAND starts, for proclock run (the
// waiter with --lock-delay 0: the TTL alone bounds it) and etcdctl lock.
func BenchmarkCommandKilledHolder(b *testing.B) {
	tc := startCluster(b, 1)
	c := tc.client(b)
	ep := tc.endpoints()[0]
	bin, ectl := command(b), etcdctl(b)
	measure := func(b *testing.B, name string, holder, waiter []string) {
		var total time.Duration
		for b.Loop() {
			h := exec.Command(holder[0], holder[1:]...)
			hout, _ := h.StdoutPipe()
			if err := h.Start(); err != nil {
				b.Fatal(err)
			}
			bufio.NewReader(hout).ReadString('\n') // holding
			w := exec.Command(waiter[0], waiter[1:]...)
			wout, _ := w.StdoutPipe()
			if err := w.Start(); err != nil {
				b.Fatal(err)
			}
			waitKeys(b, c, name, 2)
			killed := time.Now()
			h.Process.Signal(syscall.SIGKILL)
			line, _ := bufio.NewReader(wout).ReadString('\n')
			if !strings.HasPrefix(line, "started") {
				b.Fatalf("waiter printed %q", line)
			}
			total += time.Since(killed)
			h.Wait()
			w.Wait()
		}
		b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms-to-next")
	}
	b.Run("proclock-run-ttl1s", func(b *testing.B) {
		name := "b/cmd-killed"
		measure(b, name,
			[]string{bin, "run", "--ttl", "1", lockURL([]string{ep}, name), "--", "/bin/sh", "-c", "echo holding; exec sleep 100"},
			[]string{bin, "run", "--ttl", "1", "--lock-delay", "0", lockURL([]string{ep}, name), "--", "echo", "started"})
	})
	b.Run("etcdctl-lock-ttl1s", func(b *testing.B) {
		name := "b/cmd-killed-etcdctl"
		measure(b, name,
			[]string{ectl, "--endpoints", ep, "lock", "--ttl", "1", name, "--", "/bin/sh", "-c", "echo holding; exec sleep 100"},
			[]string{ectl, "--endpoints", ep, "lock", "--ttl", "1", name, "--", "echo", "started"})
	})
}
