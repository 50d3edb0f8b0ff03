package cluster

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

	clientv3 "go.etcd.io/etcd/client/v3"
	"golang.org/x/sys/unix"
)

// The command's cases on a cluster lock (docs/cluster.md, "The
// command"): the proclock program of cluster/cmd/proclock, run as a user
// runs it, against embedded members, with COMMANDs that are real process
// groups. They are linux's: they read /proc to tell a group dead.

// commandOnce builds cluster/cmd/proclock once per test binary, into the
// user cache (as etcdctl is): every case runs the same program.
var commandOnce = sync.OnceValues(func() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "proclock-test")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "proclock-cluster")
	tmp := fmt.Sprintf("%s.%d", bin, os.Getpid())
	out, err := exec.Command("go", "build", "-o", tmp, "github.com/proclock/proclock/cluster/cmd/proclock").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build: %v\n%s", err, out)
	}
	return bin, os.Rename(tmp, bin)
})

func command(t testing.TB) string {
	t.Helper()
	bin, err := commandOnce()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// lockURL is the command's name for lock name on endpoints.
func lockURL(endpoints []string, name string) string {
	return "etcd://" + strings.Join(endpoints, ",") + "/" + name
}

// cmdRun is one proclock started by a test: COMMAND's lines arrive
// stamped, stderr is kept, stdin is a pipe the test can close.
type cmdRun struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan stampedLine
	stderr lockedBuffer
	done   chan struct{}
	code   int
	ended  time.Time
}

// lockedBuffer is a buffer that the test may read while os/exec's copier
// writes to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type stampedLine struct {
	text string
	at   time.Time
}

func startCommand(t testing.TB, args ...string) *cmdRun {
	t.Helper()
	cmd := exec.Command(command(t), args...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	r := &cmdRun{cmd: cmd, stdin: stdin, lines: make(chan stampedLine, 64), done: make(chan struct{})}
	cmd.Stderr = &r.stderr
	// A process of COMMAND's that outlives proclock (a grandchild of a
	// SIGKILLed proclock: the parent-death signal reaches the child
	// only) keeps the pipes open; Wait gives up on them after this.
	cmd.WaitDelay = 10 * time.Second
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			r.lines <- stampedLine{sc.Text(), time.Now()}
		}
		close(r.lines)
		cmd.Wait()
		r.code, r.ended = cmd.ProcessState.ExitCode(), time.Now()
		close(r.done)
	}()
	t.Cleanup(func() {
		cmd.Process.Kill()
		stdin.Close() // COMMANDs that read stdin to the end end too
		<-r.done
	})
	return r
}

// line waits up to limit for COMMAND's next line.
func (r *cmdRun) line(t testing.TB, limit time.Duration) stampedLine {
	t.Helper()
	l, err := r.next(limit)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// next is line's work, for a goroutine that cannot fail a test.
func (r *cmdRun) next(limit time.Duration) (stampedLine, error) {
	select {
	case l, ok := <-r.lines:
		if !ok {
			<-r.done
			return l, fmt.Errorf("proclock %q ended (exit %d) without the line; stderr: %s", r.cmd.Args[1:], r.code, r.stderr.String())
		}
		return l, nil
	case <-time.After(limit):
		return stampedLine{}, fmt.Errorf("proclock %q: no line within %v; stderr: %s", r.cmd.Args[1:], limit, r.stderr.String())
	}
}

// wait waits up to limit for proclock to exit and returns its code.
func (r *cmdRun) wait(t testing.TB, limit time.Duration) int {
	t.Helper()
	select {
	case <-r.done:
		return r.code
	case <-time.After(limit):
		// Its goroutines' stacks, for whoever reads the failure: SIGABRT,
		// which the Go runtime answers with them (run catches SIGQUIT,
		// to pass it on, and would end quietly).
		r.cmd.Process.Signal(syscall.SIGABRT)
		select {
		case <-r.done:
		case <-time.After(5 * time.Second):
		}
		t.Fatalf("proclock %q still runs after %v; stderr (with its stacks, after SIGABRT): %s", r.cmd.Args[1:], limit, r.stderr.String())
	}
	return -1
}

// runCommand runs proclock to its end and returns its exit code, stdout
// and stderr.
func runCommand(t testing.TB, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(command(t), args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if _, ok := errors.AsType[*exec.ExitError](err); err != nil && !ok {
		t.Fatalf("proclock %q: %v", args, err)
	}
	return cmd.ProcessState.ExitCode(), out.String(), errb.String()
}

// stubbornGroup is a COMMAND whose group outlives a SIGTERM: a shell that
// ignores it, and a grandchild that ignores it too. It prints "ready SH
// GRANDCHILD", then its environment's lock variables.
var stubbornGroup = []string{"/bin/sh", "-c",
	`trap '' TERM; sleep 1000 & echo ready $$ $!; echo "$PROCLOCK_KEY $PROCLOCK_FENCE"; wait`}

// pids reads stubbornGroup's ready line.
func pids(t testing.TB, l stampedLine) []int {
	t.Helper()
	f := strings.Fields(l.text)
	if len(f) != 3 || f[0] != "ready" {
		t.Fatalf("COMMAND said %q, want ready PID PID", l.text)
	}
	var ps []int
	for _, s := range f[1:] {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatal(err)
		}
		ps = append(ps, n)
	}
	return ps
}

// alive reports whether pid runs (a zombie has done all it will do).
func alive(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	s := string(b)
	i := strings.LastIndexByte(s, ')')
	return i < 0 || i+2 >= len(s) || (s[i+2] != 'Z' && s[i+2] != 'X')
}

// deathOf watches pids and returns a channel that gets the moment the
// last of them died: a pidfd (which works for processes the test did not
// start) polls readable when its process exits.
func deathOf(pids []int) <-chan time.Time {
	ch := make(chan time.Time, 1)
	var fds []int
	for _, p := range pids {
		if fd, err := unix.PidfdOpen(p, 0); err == nil {
			fds = append(fds, fd)
		}
	}
	go func() {
		defer func() {
			for _, fd := range fds {
				unix.Close(fd)
			}
		}()
		for _, fd := range fds {
			pfd := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
			for {
				n, err := unix.Poll(pfd, -1)
				if n > 0 || (err != nil && err != unix.EINTR) {
					break
				}
			}
		}
		ch <- time.Now()
	}()
	return ch
}

// TestCommandBlackholed: proclock run holds a lock through a proxy that is
// blackholed at a random phase; COMMAND's whole group (a shell and a
// grandchild, both ignoring SIGTERM) is dead before an observer's watch
// sees the server delete the key, in every run, and proclock exits 125.
// 10 holders of 5 rounds each run side by side; the worst margin is
// logged.
func TestCommandBlackholed(t *testing.T) {
	const ttl = 2 * time.Second
	n, worst := blackholeRuns(t, "t/cmd-blackhole", ttl, func(px *proxy, dels *deletions, name string) func(time.Duration) (time.Duration, error) {
		return func(ph time.Duration) (time.Duration, error) { return blackholeCommand(t, px, dels, name, ttl, ph) }
	})
	t.Logf("%d blackholed runs (TTL %v, grace %v, margin %v): COMMAND's group dead before the server's delete by at least %v (worst run)",
		n, ttl, ttl/5, ttl/10, worst)
}

// blackholeCommand is one round: run, blackhole after ph, and the time
// from the group's death to the key's deletion.
func blackholeCommand(t *testing.T, px *proxy, dels *deletions, name string, ttl, ph time.Duration) (time.Duration, error) {
	px.setBlackhole(false)
	r := startCommand(t, append([]string{"run", "--ttl", ttl.String(), lockURL([]string{px.addr()}, name), "--"}, stubbornGroup...)...)
	ready, err := r.next(30 * time.Second)
	if err != nil {
		return 0, err
	}
	keyLine, err := r.next(5 * time.Second)
	if err != nil {
		return 0, err
	}
	f := strings.Fields(ready.text)
	key := strings.Fields(keyLine.text)[0]
	var ps []int
	for _, s := range f[1:] {
		n, _ := strconv.Atoi(s)
		ps = append(ps, n)
	}
	time.Sleep(ph) // the random phase: not waiting for anything
	px.setBlackhole(true)
	dead := deathOf(ps)
	deleted, ok := dels.of(key, 10*time.Second)
	if !ok {
		return 0, fmt.Errorf("the server did not delete %s within 10 s", key)
	}
	var diedAt time.Time
	select {
	case diedAt = <-dead:
	case <-time.After(10 * time.Second):
		return 0, fmt.Errorf("COMMAND's group %v lives 10 s after its key's deletion", ps)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		return 0, fmt.Errorf("proclock runs on 10 s after the loss")
	}
	if r.code != 125 {
		return 0, fmt.Errorf("proclock exit %d, want 125; stderr: %s", r.code, r.stderr.String())
	}
	if m := deleted.Sub(diedAt); m <= 0 {
		return m, fmt.Errorf("phase %v: COMMAND's group died %v after the server deleted the key", ph, -m)
	}
	return deleted.Sub(diedAt), nil
}

// TestCommandStopped: SIGSTOP of the proclock process only (COMMAND runs
// on), past the TTL: the next holder's COMMAND starts only after the
// lock-delay from the key's deletion; the resumed proclock kills its
// COMMAND's group at once and exits 125; a write fenced with its token
// is refused.
func TestCommandStopped(t *testing.T) {
	const ttl = 2 * time.Second
	tc := startCluster(t, 1)
	c := tc.client(t)
	name := "t/cmd-stopped"
	url := lockURL(tc.endpoints(), name)
	dels := watchDeletions(t, c, name+"/")
	a := startCommand(t, append([]string{"run", "--ttl", ttl.String(), url, "--"}, stubbornGroup...)...)
	ps := pids(t, a.line(t, 30*time.Second))
	kf := strings.Fields(a.line(t, 5*time.Second).text)
	key, fence := kf[0], kf[1]
	a.cmd.Process.Signal(syscall.SIGSTOP)
	b := startCommand(t, "run", "--ttl", ttl.String(), url, "--", "/bin/sh", "-c", `echo started; echo "$PROCLOCK_FENCE"; cat >/dev/null`)
	deleted, ok := dels.of(key, 10*time.Second)
	if !ok {
		t.Fatalf("the stopped holder's key %s was not deleted", key)
	}
	started := b.line(t, 15*time.Second)
	if gap := started.at.Sub(deleted); gap < ttl-50*time.Millisecond {
		t.Errorf("the next holder's COMMAND started %v after the key's deletion, within the lock-delay (%v)", gap, ttl)
	}
	f, _ := strconv.ParseInt(fence, 10, 64)
	if next, _ := strconv.ParseInt(b.line(t, time.Second).text, 10, 64); next <= f {
		t.Errorf("the next holder's fence %d is not above the old one %d", next, f)
	}
	// The old holder's COMMAND, still running, writes with its token.
	resp, err := c.Txn(ctxFor(t, 5*time.Second)).If(clientv3.Compare(clientv3.CreateRevision(key), "=", f)).
		Then(clientv3.OpPut("t/cmd-stopped-resource", "stale")).Commit()
	if err != nil || resp.Succeeded {
		t.Errorf("a write fenced with the old token: succeeded %v, %v; want refused", resp != nil && resp.Succeeded, err)
	}
	for _, p := range ps {
		if !alive(p) {
			t.Fatalf("COMMAND's process %d died while proclock was stopped: the case needs it running", p)
		}
	}
	resumed := time.Now()
	dead := deathOf(ps)
	a.cmd.Process.Signal(syscall.SIGCONT)
	select {
	case at := <-dead:
		t.Logf("resumed proclock killed its COMMAND's group %v after SIGCONT", at.Sub(resumed))
		if at.Sub(resumed) > time.Second {
			t.Errorf("the resumed proclock took %v to kill its COMMAND", at.Sub(resumed))
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the resumed proclock's COMMAND lives on")
	}
	if code := a.wait(t, 10*time.Second); code != 125 {
		t.Errorf("resumed proclock exit %d, want 125; stderr: %s", code, a.stderr.String())
	}
	b.stdin.Close()
	if code := b.wait(t, 10*time.Second); code != 0 {
		t.Errorf("next holder exit %d; stderr: %s", code, b.stderr.String())
	}
}

// TestCommandKilledJobDies: proclock run SIGKILLed while it holds a
// cluster lock takes its job with it: COMMAND's guard kills COMMAND's
// group (a shell and a background grandchild, both ignoring SIGTERM)
// before the lease can expire, so that the next holder's COMMAND, which
// waits with no lock-delay, starts after the last of them died. Without
// the guard the grandchild (reparented, untouched by the parent-death
// signal) ran on beside the next holder.
func TestCommandKilledJobDies(t *testing.T) {
	const ttl = 2 * time.Second
	tc := startCluster(t, 1)
	url := lockURL(tc.endpoints(), "t/cmd-killed")
	a := startCommand(t, append([]string{"run", "--ttl", ttl.String(), url, "--"}, stubbornGroup...)...)
	ps := pids(t, a.line(t, 30*time.Second))
	a.line(t, 5*time.Second)
	dead := deathOf(ps)
	a.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	a.wait(t, 10*time.Second)
	// While the lease lives on, status says its proclock is gone.
	if code, out, errs := runCommand(t, "status", url); code == 1 {
		if !strings.Contains(out, "its proclock is gone") {
			t.Errorf("status of the killed proclock's lock does not say it is gone: %s", out)
		}
	} else {
		t.Logf("status after the kill: exit %d (the lease ran out first): %s%s", code, out, errs)
	}
	b := startCommand(t, "run", "-w", "20", "--lock-delay", "0", "--ttl", ttl.String(), url, "--", "/bin/sh", "-c", `echo started; cat >/dev/null`)
	started := b.line(t, 30*time.Second)
	select {
	case at := <-dead:
		t.Logf("the killed proclock's group was dead %v after the SIGKILL, %v before the next COMMAND started",
			at.Sub(killed), started.at.Sub(at))
		if !at.Before(started.at) {
			t.Errorf("the killed proclock's group died %v after the next holder's COMMAND started", at.Sub(started.at))
		}
	default:
		for _, p := range ps {
			if alive(p) {
				t.Errorf("the killed proclock's COMMAND process %d runs beside the next holder's COMMAND", p)
			}
		}
	}
	b.stdin.Close()
	if code := b.wait(t, 10*time.Second); code != 0 {
		t.Errorf("next holder exit %d; stderr: %s", code, b.stderr.String())
	}
}

// TestCommandLeaderKilled: the leader of a 3-member cluster killed while
// proclock run holds: the lock stays held (the same key and fence), COMMAND
// is neither stopped nor started again, and it ends as it would have.
func TestCommandLeaderKilled(t *testing.T) {
	const ttl = 3 * time.Second
	tc := startCluster(t, 3)
	c := tc.client(t)
	name := "t/cmd-leader"
	url := lockURL(tc.endpoints(), name)
	r := startCommand(t, "run", "--ttl", ttl.String(), url, "--", "/bin/sh", "-c", `echo started $PROCLOCK_FENCE; cat >/dev/null; echo done`)
	first := r.line(t, 30*time.Second)
	leader := tc.waitLeader(t)
	closed := tc.members[leader].kill()
	defer func() { <-closed }()
	tc.waitLeader(t)
	// Wait out more than the TTL on the lock's own key: a holder that
	// lost it would have stopped COMMAND by then.
	time.Sleep(ttl + time.Second) // the time the lock must survive, not a wait for an event
	select {
	case l, ok := <-r.lines:
		t.Fatalf("COMMAND said %q (more %v) after the leader died; stderr: %s", l.text, ok, r.stderr.String())
	case <-r.done:
		t.Fatalf("proclock exited %d after the leader died; stderr: %s", r.code, r.stderr.String())
	default:
	}
	resp, err := c.Get(ctxFor(t, 5*time.Second), name+"/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 || "started "+strconv.FormatInt(resp.Kvs[0].CreateRevision, 10) != first.text {
		t.Errorf("after the leader's death: %v, %v; want the one key of %q", resp, err, first.text)
	}
	r.stdin.Close()
	if l := r.line(t, 10*time.Second); l.text != "done" {
		t.Errorf("COMMAND said %q, want done", l.text)
	}
	if code := r.wait(t, 10*time.Second); code != 0 {
		t.Errorf("exit %d; stderr: %s", code, r.stderr.String())
	}
}

// TestCommandBesideEtcdctl: etcdctl lock holds, and proclock run -n is
// held (exit 1), naming etcdctl's lease; proclock run holds, and etcdctl
// lock -- COMMAND waits until it lets go.
func TestCommandBesideEtcdctl(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	eps := tc.endpoints()
	name := "t/cmd-etcdctl"
	url := lockURL(eps, name)

	l := startEtcdctlLock(t, eps, name)
	key := <-l.keys
	code, _, stderr := runCommand(t, "run", "-n", url, "--", "true")
	lease := key[strings.LastIndexByte(key, '/')+1:]
	if code != 1 || !strings.Contains(stderr, "etcdctl") || !strings.Contains(stderr, lease) {
		t.Errorf("proclock run -n beside etcdctl lock: exit %d, %q; want 1 naming etcdctl and lease %s", code, stderr, lease)
	}
	l.stop(t)

	r := startCommand(t, "run", url, "--", "/bin/sh", "-c", `echo holding; cat >/dev/null`)
	r.line(t, 30*time.Second)
	ectl := exec.Command(etcdctl(t), "--endpoints", strings.Join(eps, ","), "lock", name, "--", "/bin/sh", "-c", "echo etcdctl-ran")
	// etcdctl's output is read here while it runs: through a pipe, not
	// a buffer that os/exec's copier writes meanwhile.
	eout, err := ectl.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	ectl.Stderr = os.Stderr
	if err := ectl.Start(); err != nil {
		t.Fatal(err)
	}
	ran := make(chan string, 1)
	go func() {
		b, _ := io.ReadAll(eout)
		ran <- string(b)
	}()
	waitKeys(t, c, name, 2) // etcdctl queues behind proclock
	select {
	case out := <-ran:
		t.Errorf("etcdctl ended while proclock held, printing %q", out)
	default:
	}
	r.stdin.Close()
	if code := r.wait(t, 10*time.Second); code != 0 {
		t.Errorf("proclock exit %d; stderr: %s", code, r.stderr.String())
	}
	out := <-ran
	if err := ectl.Wait(); err != nil || strings.TrimSpace(out) != "etcdctl-ran" {
		t.Errorf("etcdctl lock after proclock let go: %v, %q", err, out)
	}
}

// TestCommandExitCodes: each situation's documented code on a cluster
// lock, and bounded: an unreachable or blackholed server gives 123 within
// the connect timeout (and a second), never a hang.
func TestCommandExitCodes(t *testing.T) {
	tc := startCluster(t, 1)
	eps := tc.endpoints()
	name := "t/cmd-codes"
	url := lockURL(eps, name)
	holder := startCommand(t, "run", url, "--", "/bin/sh", "-c", `echo holding; cat >/dev/null`)
	holder.line(t, 30*time.Second)
	dead := freeURL(t) // nobody listens there
	bh := newProxy(t, eps[0])
	bh.setBlackhole(true)
	for _, tc := range []struct {
		name string
		args []string
		want int
		// says is in stderr: the timeout the command gave up after (the
		// option's, not the default 5s). Its time is not asserted: on a
		// loaded machine the command's start alone can take a second.
		says string
	}{
		{"COMMAND's status", []string{"run", lockURL(eps, "t/cmd-codes-free"), "--", "/bin/sh", "-c", "exit 3"}, 3, ""},
		{"COMMAND killed by a signal", []string{"run", lockURL(eps, "t/cmd-codes-free"), "--", "/bin/sh", "-c", "kill -TERM $$"}, 128 + 15, ""},
		{"held", []string{"run", "-n", url, "--", "true"}, 1, ""},
		{"held -E", []string{"run", "-n", "-E", "75", url, "--", "true"}, 75, ""},
		{"wait ran out", []string{"run", "-w", "300ms", url, "--", "true"}, 124, ""},
		{"no server", []string{"run", "--connect-timeout", "1s", lockURL([]string{strings.TrimPrefix(dead, "http://")}, name), "--", "true"}, 123, "within 1s"},
		{"blackholed server", []string{"run", "--connect-timeout", "1s", lockURL([]string{bh.addr()}, name), "--", "true"}, 123, "within 1s"},
		{"status, no server", []string{"status", "--connect-timeout", "1s", lockURL([]string{strings.TrimPrefix(dead, "http://")}, name)}, 123, "within 1s"},
		{"status held", []string{"status", url}, 1, ""},
		{"status free", []string{"status", lockURL(eps, "t/cmd-codes-free")}, 0, ""},
		{"grace too long for the TTL", []string{"run", "--ttl", "1", "--grace", "1s", url, "--", "true"}, 2, ""},
		{"no name", []string{"run", "etcd://" + eps[0] + "/", "--", "true"}, 2, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := runCommand(t, tc.args...)
			if code != tc.want {
				t.Errorf("proclock %q: exit %d, want %d; stderr: %s", tc.args, code, tc.want, stderr)
			}
			if !strings.Contains(stderr, tc.says) {
				t.Errorf("proclock %q: stderr does not say %q: %s", tc.args, tc.says, stderr)
			}
		})
	}
	holder.stdin.Close()
	holder.wait(t, 10*time.Second)
}

// TestCommandEnvInnermost: a nested run's COMMAND sees the inner lock's
// key and fence, set over the outer's.
func TestCommandEnvInnermost(t *testing.T) {
	tc := startCluster(t, 1)
	eps := tc.endpoints()
	code, out, stderr := runCommand(t, "run", lockURL(eps, "t/outer"), "--",
		command(t), "run", lockURL(eps, "t/inner"), "--", "/bin/sh", "-c", `echo "$PROCLOCK_KEY $PROCLOCK_FENCE $ETCD_LOCK_KEY $ETCD_LOCK_REV"`)
	f := strings.Fields(out)
	if code != 0 || len(f) != 4 || !strings.HasPrefix(f[0], "t/inner/") || f[2] != f[0] || f[3] != f[1] {
		t.Fatalf("nested run: exit %d, %q; want the inner key and fence twice; stderr: %s", code, out, stderr)
	}
	if f[0][len("t/inner/"):] == "" {
		t.Errorf("key %q has no lease", f[0])
	}
}

// statusGolden compares status --json of url with testdata/status/NAME.json
// once the values of one run (revisions, leases, times, pids, ports) are
// replaced by their kind.
func statusGolden(t *testing.T, url, golden string, wantCode int) {
	t.Helper()
	code, out, stderr := runCommand(t, "status", "--json", url)
	if code != wantCode {
		t.Fatalf("status %s: exit %d, want %d; stderr: %s", url, code, wantCode, stderr)
	}
	var m map[string]any
	if err := json.Unmarshal([]byte(out), &m); err != nil {
		t.Fatalf("status --json: %v: %q", err, out)
	}
	normalise(m)
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	enc.Encode(m)
	got := buf.Bytes()
	path := filepath.Join("testdata", "status", golden+".json")
	if os.Getenv("PROCLOCK_UPDATE_GOLDEN") != "" {
		os.MkdirAll(filepath.Dir(path), 0o755)
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (PROCLOCK_UPDATE_GOLDEN=1 go test -run TestCommandStatusGolden writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("status --json for %s, normalised:\n%s\nwant (%s):\n%s", golden, got, path, want)
	}
}

// normalise replaces what differs from run to run by its kind.
func normalise(m map[string]any) {
	for k, v := range m {
		switch k {
		case "revision", "fence", "pid", "startTime", "pidNamespace", "timeNamespace":
			m[k] = "<number>"
		case "heldForSeconds", "ttlLeftSeconds":
			m[k] = "<seconds>"
		case "ttlLeftMs":
			m[k] = "<ms>"
		case "acquiredAt", "lockDelayUntil", "processStart":
			m[k] = "<time>"
		case "lease", "host", "bootId":
			m[k] = "<" + k + ">"
		case "endpoints":
			m[k] = []string{"<endpoint>"}
		case "path", "key", "reason":
			s := v.(string)
			if i := strings.Index(s, "/t/"); k == "path" && i >= 0 {
				s = "etcd://<endpoint>" + s[i:]
			}
			if i := strings.LastIndexByte(s, '/'); k == "key" && i >= 0 {
				s = s[:i+1] + "<lease>"
			}
			if i := strings.LastIndex(s, "lease "); k == "reason" && i >= 0 && strings.HasPrefix(s, "an etcdctl lock") {
				s = s[:i] + "lease <lease>"
			}
			m[k] = s
		case "holder":
			normalise(v.(map[string]any))
		}
	}
}

// TestCommandStatusGolden: status --json for each state of a cluster
// lock: free, held by proclock (with a waiter), held by etcdctl, held by
// a proclock that is gone (not renewing: issue 29), free after an unclean
// handoff, and held while serving the lock-delay.
func TestCommandStatusGolden(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	eps := tc.endpoints()
	name := "t/cmd-status"
	url := lockURL(eps, name)
	statusGolden(t, url, "free", 0)

	r := startCommand(t, "run", url, "--", "/bin/sh", "-c", `echo holding; cat >/dev/null`)
	r.line(t, 30*time.Second)
	w := startCommand(t, "run", url, "--", "true")
	waitKeys(t, c, name, 2)
	statusGolden(t, url, "held", 1)
	r.stdin.Close()
	r.wait(t, 10*time.Second)
	w.wait(t, 10*time.Second)

	l := startEtcdctlLock(t, eps, name)
	<-l.keys
	statusGolden(t, url, "held-etcdctl", 1)
	l.stop(t)

	// A holder killed: free, but unclean until the next holder.
	dels := watchDeletions(t, c, name+"/")
	k := startCommand(t, "run", "--ttl", "3", url, "--", "/bin/sh", "-c", `echo "$PROCLOCK_KEY"; cat >/dev/null`)
	key := k.line(t, 30*time.Second).text
	k.cmd.Process.Kill()
	k.wait(t, 10*time.Second)
	statusGolden(t, url, "held-not-renewing", 1)
	if _, ok := dels.of(key, 10*time.Second); !ok {
		t.Fatalf("the killed holder's key %s outlived its TTL", key)
	}
	statusGolden(t, url, "free-unclean", 0)

	d := startCommand(t, "run", "--ttl", "1", "--lock-delay", "20s", url, "--", "true")
	deadline := time.Now().Add(10 * time.Second)
	for {
		st, err := Inspect(ctxFor(t, 5*time.Second), c, name)
		if err == nil && st.LockDelay {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no lock-delay seen within 10 s: %+v, %v", st, err)
		}
		time.Sleep(10 * time.Millisecond) // polling etcd's state: there is no notice of it
	}
	statusGolden(t, url, "lock-delay", 1)
	d.cmd.Process.Signal(syscall.SIGTERM)
	d.wait(t, 10*time.Second)
}

// TestCommandHostOnlyOptions: the host lock's own options are refused on
// an etcd:// name with exit 2 and a line that says why, as --ttl is on a
// PATH; -x and -o are accepted (a cluster lock has no descriptor for
// COMMAND to inherit). Before the fix, --remove, --mechanism and
// --allow-network-fs ran COMMAND and exited 0 (review finding 11).
func TestCommandHostOnlyOptions(t *testing.T) {
	tc := startCluster(t, 1)
	url := lockURL(tc.endpoints(), "t/cmd-host-only")
	path := filepath.Join(t.TempDir(), "x.lock")
	for _, c := range []struct {
		args []string
		want int
		says string
	}{
		{[]string{"run", "--remove", url, "--", "true"}, 2, "--remove applies to locks on this host (a PATH), not to " + url},
		{[]string{"run", "--mechanism", "file", url, "--", "true"}, 2, "--mechanism applies to locks on this host"},
		{[]string{"run", "--allow-network-fs", url, "--", "true"}, 2, "--allow-network-fs applies to locks on this host"},
		{[]string{"status", "--mechanism", "sqlite", url}, 2, "--mechanism applies to locks on this host"},
		{[]string{"run", "-x", "-o", url, "--", "true"}, 0, ""},
		{[]string{"run", "--ttl", "5", path, "--", "true"}, 2, "--ttl applies to cluster locks"},
		{[]string{"run", "--remove", "--mechanism", "file", "--allow-network-fs", path, "--", "true"}, 0, ""},
	} {
		code, _, stderr := runCommand(t, c.args...)
		if code != c.want || !strings.Contains(stderr, c.says) {
			t.Errorf("proclock %q: exit %d, stderr %q; want exit %d and %q", c.args, code, stderr, c.want, c.says)
		}
	}
}

// TestCommandExitsAtCommandsDeath: a revoke and a delete of the key, at
// TTL 30 s (grace 6 s), with a COMMAND that dies of its SIGTERM: run exits
// 125 as soon as COMMAND has died, not when SIGKILL would have been due.
// Issue 29's code waited out the whole grace (6.0 s).
func TestCommandExitsAtCommandsDeath(t *testing.T) {
	const ttl = 30 * time.Second
	tc := startCluster(t, 1)
	c := tc.client(t)
	for _, how := range []string{"revoke", "del"} {
		name := "t/cmd-death-" + how
		r := startCommand(t, "run", "--ttl", ttl.String(), lockURL(tc.endpoints(), name), "--",
			"/bin/sh", "-c", `echo "$PROCLOCK_KEY $PROCLOCK_LEASE $$"; exec cat`)
		f := strings.Fields(r.line(t, 30*time.Second).text)
		lease, _ := strconv.ParseInt(f[1], 16, 64)
		pid, _ := strconv.Atoi(f[2])
		dead := deathOf([]int{pid})
		ctx := ctxFor(t, 5*time.Second)
		var err error
		if how == "revoke" {
			_, err = c.Revoke(ctx, leaseID(lease))
		} else {
			_, err = c.Delete(ctx, f[0])
		}
		if err != nil {
			t.Fatal(err)
		}
		code := r.wait(t, ttl)
		died := <-dead
		t.Logf("%s: proclock exited %v after COMMAND died", how, r.ended.Sub(died))
		if code != 125 {
			t.Errorf("%s: exit %d, want 125; stderr: %s", how, code, r.stderr.String())
		}
		if after := r.ended.Sub(died); after > time.Second {
			t.Errorf("%s: proclock exited %v after COMMAND died of its SIGTERM; want at once, not at the end of the grace (%v)", how, after, ttl/5)
		}
	}
}

// TestCommandWaiterLeaseDies: a waiter whose own lease dies while it
// waits (revoked, its key deleted, or cut off past its deadline) exits
// 125, as a loss, without starting COMMAND. Issue 29's code exited 2 or
// 123, by the cause.
func TestCommandWaiterLeaseDies(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	eps := tc.endpoints()
	for _, how := range []string{"revoke", "del", "cut off"} {
		name := "t/cmd-waiter-" + strings.ReplaceAll(how, " ", "-")
		holder := startCommand(t, "run", lockURL(eps, name), "--", "/bin/sh", "-c", `echo holding; cat >/dev/null`)
		holder.line(t, 30*time.Second)
		px := newProxy(t, eps[0])
		w := startCommand(t, "run", "-w", "60", "--ttl", "2", lockURL([]string{px.addr()}, name), "--", "/bin/sh", "-c", "echo ran")
		waitKeys(t, c, name, 2)
		ctx := ctxFor(t, 5*time.Second)
		resp, err := c.Get(ctx, name+"/", append(clientv3.WithLastCreate(), clientv3.WithPrefix())...)
		if err != nil {
			t.Fatal(err)
		}
		switch how {
		case "revoke":
			_, err = c.Revoke(ctx, leaseID(resp.Kvs[0].Lease))
		case "del":
			_, err = c.Delete(ctx, string(resp.Kvs[0].Key))
		default:
			px.setBlackhole(true)
		}
		if err != nil {
			t.Fatal(err)
		}
		// The bound only catches a waiter that never exits (a cut-off
		// one, cut before its watch was created, once sat out its -w).
		if code := w.wait(t, 60*time.Second); code != 125 {
			t.Errorf("%s: the waiter exited %d, want 125; stderr: %s", how, code, w.stderr.String())
		}
		select {
		case l, ok := <-w.lines:
			if ok {
				t.Errorf("%s: the waiter's COMMAND ran: %q", how, l.text)
			}
		default:
		}
		holder.stdin.Close()
		holder.wait(t, 10*time.Second)
	}
}

// TestCommandVerboseLockDelay: run -v says when it begins to serve a
// lock-delay, and how long, before it serves it. Issue 29's waiter said
// nothing until the delay was over (19.6 s of silence at TTL 10 s).
func TestCommandVerboseLockDelay(t *testing.T) {
	const delay = 2 * time.Second
	tc := startCluster(t, 1)
	url := lockURL(tc.endpoints(), "t/cmd-verbose-delay")
	k := startCommand(t, "run", "--ttl", "1", url, "--", "/bin/sh", "-c", `echo held; cat >/dev/null`)
	k.line(t, 30*time.Second)
	k.cmd.Process.Kill() // an unclean end: the next holder serves the lock-delay
	k.wait(t, 10*time.Second)
	cmd := exec.Command(command(t), "run", "-v", "-w", "30", "--ttl", "1", "--lock-delay", delay.String(), url, "--", "/bin/sh", "-c", "echo started")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	var out lockedBuffer
	cmd.Stdout = &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	told := time.Time{}
	sc := bufio.NewScanner(stderr)
	for sc.Scan() {
		if strings.Contains(sc.Text(), "serving a lock-delay of "+delay.String()) {
			told = time.Now()
			break
		}
	}
	if told.IsZero() {
		cmd.Wait()
		t.Fatalf("run -v never said it serves a lock-delay of %v before it did; stdout %q", delay, out.String())
	}
	if out.String() != "" {
		t.Errorf("COMMAND said %q before the lock-delay was told", out.String())
	}
	io.Copy(io.Discard, stderr)
	if err := cmd.Wait(); err != nil || out.String() != "started\n" {
		t.Fatalf("run -v: %v, %q", err, out.String())
	}
	if served := time.Since(told); served < delay-100*time.Millisecond {
		t.Errorf("the lock-delay was told %v before run ended; want it told as it began (%v)", served, delay)
	}
}
