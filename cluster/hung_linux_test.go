package cluster

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// hungRuns is how many runs TestCommandOneMemberHung makes: a few in the
// normal suite, PROCLOCK_HUNG_RUNS=20 for issue 29's count.
func hungRuns(t *testing.T) int {
	n := 3
	if s := os.Getenv("PROCLOCK_HUNG_RUNS"); s != "" {
		v, err := strconv.Atoi(s)
		if err != nil || v < 1 {
			t.Fatalf("PROCLOCK_HUNG_RUNS=%q: not a count", s)
		}
		n = v
	}
	return n
}

// TestCommandOneMemberHung: proclock run --ttl 2 given three members,
// each through a proxy of its own; one proxy is blackholed at a random
// phase of the keepalives (that member hangs; the quorum is intact). The
// lock and COMMAND must outlive three TTLs, with the same key, and COMMAND
// end as it would have. Before issue 29's fix the keepalive sent to the
// hung member held up the next one until it timed out, which came after
// run's SIGTERM: 6 runs of 6 were stopped with exit 125.
func TestCommandOneMemberHung(t *testing.T) {
	const ttl, side = 2 * time.Second, 5
	runs := hungRuns(t)
	tc := startCluster(t, 3)
	c := tc.client(t)
	rnd := seeded(t)
	var failed sync.Map
	for first := 0; first < runs; first += side {
		var wg sync.WaitGroup
		for i := first; i < min(first+side, runs); i++ {
			hung, ph := rnd.IntN(3), phase(rnd, ttl/3)
			wg.Go(func() {
				if err := hungRun(t, tc, c, fmt.Sprintf("t/cmd-hung/%d", i), ttl, hung, ph); err != nil {
					failed.Store(i, err)
				}
			})
		}
		wg.Wait()
	}
	bad := 0
	failed.Range(func(k, v any) bool {
		bad++
		t.Errorf("run %d: %v", k, v)
		return true
	})
	t.Logf("%d of %d runs kept the lock and COMMAND at TTL %v with one member of three hung", runs-bad, runs, ttl)
}

// hungRun is one run of TestCommandOneMemberHung: member hung is
// blackholed ph after COMMAND started.
func hungRun(t *testing.T, tc *testCluster, c *clientv3.Client, name string, ttl time.Duration, hung int, ph time.Duration) error {
	var pxs []*proxy
	var eps []string
	for _, ep := range tc.endpoints() {
		px := newProxy(t, ep)
		pxs, eps = append(pxs, px), append(eps, px.addr())
	}
	r := startCommand(t, "run", "--ttl", ttl.String(), lockURL(eps, name), "--",
		"/bin/sh", "-c", `echo "$PROCLOCK_KEY"; cat >/dev/null; echo done`)
	l, err := r.next(30 * time.Second)
	if err != nil {
		return err
	}
	key := l.text
	time.Sleep(ph) // the random phase: not waiting for anything
	pxs[hung].setBlackhole(true)
	// The time the lock must survive, not a wait for an event.
	time.Sleep(3 * ttl)
	select {
	case l, ok := <-r.lines:
		return fmt.Errorf("COMMAND said %q (more: %v) with member %d hung; stderr: %s", l.text, ok, hung, r.stderr.String())
	case <-r.done:
		return fmt.Errorf("proclock exited %d with member %d hung; stderr: %s", r.code, hung, r.stderr.String())
	default:
	}
	resp, err := c.Get(ctxFor(t, 5*time.Second), name+"/", clientv3.WithPrefix())
	if err != nil || len(resp.Kvs) != 1 || string(resp.Kvs[0].Key) != key {
		return fmt.Errorf("with member %d hung the lock's keys are %v (%v); want %s alone", hung, resp, err, key)
	}
	r.stdin.Close()
	if l, err := r.next(10 * time.Second); err != nil || l.text != "done" {
		return fmt.Errorf("COMMAND said %q, %v; want done", l.text, err)
	}
	select {
	case <-r.done:
	case <-time.After(10 * time.Second):
		return fmt.Errorf("proclock runs on 10 s after COMMAND's end")
	}
	if r.code != 0 || strings.Contains(r.stderr.String(), "lost") {
		return fmt.Errorf("exit %d, want 0; stderr: %s", r.code, r.stderr.String())
	}
	return nil
}
