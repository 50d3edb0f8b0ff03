package cluster

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/internal/locktest"
)

// etcdctlVersion is the etcdctl the interop tests build, from the Go
// module proxy, once per user cache.
const etcdctlVersion = "v3.7.3"

var etcdctlOnce = sync.OnceValues(func() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		cache = os.TempDir()
	}
	dir := filepath.Join(cache, "proclock-test", "etcdctl-"+etcdctlVersion)
	bin := filepath.Join(dir, "etcdctl")
	if _, err := os.Stat(bin); err == nil {
		return bin, nil
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	mod := "module etcdctlbuild\n\ngo 1.26.0\n"
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod), 0o644); err != nil {
		return "", err
	}
	run := func(args ...string) error {
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return nil
	}
	if err := run("get", "go.etcd.io/etcd/etcdctl/v3@"+etcdctlVersion); err != nil {
		return "", err
	}
	tmp := bin + ".tmp"
	if err := run("build", "-o", tmp, "go.etcd.io/etcd/etcdctl/v3"); err != nil {
		return "", err
	}
	return bin, os.Rename(tmp, bin)
})

// etcdctl is the path of etcdctl v3.7.3, built on first use.
func etcdctl(t testing.TB) string {
	t.Helper()
	bin, err := etcdctlOnce()
	if err != nil {
		t.Fatalf("building etcdctl %s from the module proxy: %v", etcdctlVersion, err)
	}
	return bin
}

// etcdctlLock starts `etcdctl lock NAME` (no command: it prints its key
// once it holds, and holds until SIGTERM, then unlocks).
type etcdctlLock struct {
	child *locktest.Child
	keys  chan string
}

func startEtcdctlLock(t *testing.T, endpoints []string, name string) *etcdctlLock {
	t.Helper()
	cmd := exec.Command(etcdctl(t), "--endpoints", strings.Join(endpoints, ","), "lock", "--ttl", "2", name)
	cmd.Stderr = os.Stderr
	l := &etcdctlLock{child: locktest.Start(t, cmd), keys: make(chan string, 1)}
	go func() {
		sc := bufio.NewScanner(l.child.Stdout)
		for sc.Scan() {
			if line := sc.Text(); strings.HasPrefix(line, name+"/") {
				l.keys <- line
			}
		}
	}()
	return l
}

// stop ends etcdctl with SIGTERM: it unlocks and exits 0.
func (l *etcdctlLock) stop(t *testing.T) {
	t.Helper()
	l.child.Cmd.Process.Signal(syscall.SIGTERM)
	if err := l.child.Wait(); err != nil {
		t.Errorf("etcdctl lock after SIGTERM: %v; want exit 0", err)
	}
}

// etcdctl lock holds: a proclock acquisition, without waiting, is held,
// told the holder is etcdctl's with its lease; Inspect says so; with
// waiting, it takes the lock once etcdctl lets go, and serves the
// lock-delay (etcdctl records no clean release).
func TestEtcdctlHoldsProclockWaits(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	const name = "/t/etcdctl-first"
	el := startEtcdctlLock(t, tc.endpoints(), name)
	var key string
	select {
	case key = <-el.keys:
	case <-time.After(30 * time.Second):
		t.Fatal("etcdctl lock printed no key within 30 s")
	}
	lease := strings.TrimPrefix(key, name+"/")
	ctx := ctxFor(t, 30*time.Second)
	_, err := Acquire(ctx, c, name, Options{TTL: time.Second})
	held, ok := errors.AsType[*proclock.HeldError](err)
	if !ok {
		t.Fatalf("Acquire beside etcdctl's holder = %v; want a *HeldError", err)
	}
	if held.Holder != nil || !strings.Contains(held.Reason, "etcdctl") || !strings.Contains(held.Reason, lease) {
		t.Errorf("held error: holder %v, reason %q; want no identity, etcdctl and lease %s named", held.Holder, held.Reason, lease)
	}
	st, err := Inspect(ctx, c, name)
	if err != nil || st.Key != key || st.Holder != nil || !strings.Contains(st.Reason, lease) {
		t.Errorf("Inspect = %+v, %v; want held by %s, named as etcdctl's", st, err, key)
	}
	got := make(chan error, 1)
	var l *Lock
	go func() {
		var err error
		l, err = Acquire(ctx, c, name, Options{TTL: time.Second, Wait: true, LockDelay: 100 * time.Millisecond})
		got <- err
	}()
	waitKeys(t, c, name, 2) // proclock's waiter key is in, behind etcdctl's
	select {
	case err := <-got:
		t.Fatalf("the waiting Acquire returned while etcdctl held: %v", err)
	default:
	}
	el.stop(t)
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if l.LockDelay() < 100*time.Millisecond {
		t.Errorf("lock-delay served after etcdctl's holder: %v; want at least 100ms", l.LockDelay())
	}
	l.Release()
}

// proclock holds: etcdctl lock waits behind it, and holds once proclock
// lets go.
func TestProclockHoldsEtcdctlWaits(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	const name = "/t/proclock-first"
	ctx := ctxFor(t, 30*time.Second)
	l, err := Acquire(ctx, c, name, Options{TTL: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	el := startEtcdctlLock(t, tc.endpoints(), name)
	waitKeys(t, c, name, 2) // etcdctl's waiter key is in
	select {
	case key := <-el.keys:
		t.Fatalf("etcdctl lock took %s while proclock held", key)
	default:
	}
	released := time.Now()
	if err := l.Release(); err != nil {
		t.Fatal(err)
	}
	select {
	case key := <-el.keys:
		t.Logf("etcdctl lock held %s %v after proclock's release", key, time.Since(released))
	case <-time.After(30 * time.Second):
		t.Fatal("etcdctl lock did not take the lock within 30 s of proclock's release")
	}
	el.stop(t)
}

// waitKeys waits until n keys are under the lock name.
func waitKeys(t testing.TB, c *clientv3.Client, name string, n int) {
	t.Helper()
	ctx := ctxFor(t, 30*time.Second)
	resp, err := c.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count >= int64(n) {
		return
	}
	for wr := range c.Watch(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithRev(resp.Header.Revision+1)) {
		if wr.Err() != nil {
			t.Fatal(wr.Err())
		}
		resp, err := c.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		if resp.Count >= int64(n) {
			return
		}
	}
	t.Fatalf("fewer than %d keys under %s within 30 s", n, name)
}
