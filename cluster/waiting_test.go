package cluster

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
)

// A waiter whose own lease is revoked returns an error at once, not when
// the holder lets go, and leaves no key.
func TestWaiterLeaseDies(t *testing.T) {
	tc := startCluster(t, 1)
	obs, c := tc.client(t), tc.client(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "/t/waiter-dies"
	holder, err := Acquire(ctx, obs, name, Options{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Release()
	got := make(chan error, 1)
	go func() {
		l, err := Acquire(ctx, c, name, Options{TTL: 10 * time.Second, Wait: true})
		if err == nil {
			l.Release()
		}
		got <- err
	}()
	waitKeys(t, obs, name, 2)
	resp, err := obs.Get(ctx, name+"/", append(clientv3.WithLastCreate(), clientv3.WithPrefix())...)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if _, err := obs.Revoke(ctx, clientv3.LeaseID(resp.Kvs[0].Lease)); err != nil {
		t.Fatal(err)
	}
	err = <-got
	t.Logf("the waiter returned %v after its lease was revoked: %v", time.Since(start), err)
	if err == nil || errors.Is(err, proclock.ErrHeld) || errors.Is(err, context.DeadlineExceeded) || !errors.Is(err, proclock.ErrLost) {
		t.Fatalf("waiter whose lease was revoked = %v; want an error of its own, matching proclock.ErrLost", err)
	}
	if holder.Err() != nil {
		t.Fatalf("the holder: %v", holder.Err())
	}
	if n := countKeys(t, obs, name); n != 1 {
		t.Fatalf("%d keys under the lock; want the holder's alone", n)
	}
}

// A waiter cut off from etcd before its watch on the key ahead of it is
// created returns its own lease's loss once the lease's deadline passes,
// not when ctx ends: clientv3's Watch returns only once the server has
// created the watch, and a member cut off never answers. Under load the
// command's cut-off waiter (TestCommandWaiterLeaseDies) sat there past
// its -w 60.
func TestWaitDeleteCutOff(t *testing.T) {
	const ttl = 2 * time.Second
	tc := startCluster(t, 1)
	px := newProxy(t, tc.endpoints()[0])
	c := newClient(t, []string{px.addr()})
	ctx := ctxFor(t, time.Minute)
	sent := time.Now()
	grant, err := c.Grant(ctx, int64(ttl/time.Second))
	if err != nil {
		t.Fatal(err)
	}
	a := &acquisition{c: c, name: "/t/wait-cut-off", lease: grant.ID, ttl: ttl}
	a.k = startKeeper(c, a.name, a.lease, ttl, a.opts.margin(ttl), sent)
	defer a.k.close()
	px.setBlackhole(true)
	err = a.waitDelete(ctx, a.prefix()+"ahead", grant.Revision+1)
	if ctx.Err() != nil || !errors.Is(err, proclock.ErrLost) || !errors.Is(err, ErrDeadline) {
		t.Fatalf("a wait cut off = %v (ctx: %v); want its lease's loss (ErrDeadline) before ctx ends", err, ctx.Err())
	}
}

// A waiter survives a compaction of the revisions its watches started
// from, when its connection is cut and the watches resume: it reads
// again, keeps waiting, and takes the lock when the holder lets go.
func TestWaitSurvivesCompaction(t *testing.T) {
	tc := startCluster(t, 1)
	obs := tc.client(t)
	px := newProxy(t, tc.endpoints()[0])
	c := newClient(t, []string{px.addr()})
	ctx := ctxFor(t, 30*time.Second)
	const name = "/t/compacted"
	holder, err := Acquire(ctx, obs, name, Options{TTL: 10 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan error, 1)
	var l *Lock
	go func() {
		var err error
		l, err = Acquire(ctx, c, name, Options{TTL: 10 * time.Second, Wait: true})
		got <- err
	}()
	waitKeys(t, obs, name, 2)
	var rev int64
	for i := range 10 {
		resp, err := obs.Put(ctx, fmt.Sprintf("/t/compacted-noise/%d", i), "x")
		if err != nil {
			t.Fatal(err)
		}
		rev = resp.Header.Revision
	}
	if _, err := obs.Compact(ctx, rev); err != nil {
		t.Fatal(err)
	}
	px.cut()
	if err := holder.Release(); err != nil {
		t.Fatal(err)
	}
	if err := <-got; err != nil {
		t.Fatalf("the waiter after a compaction: %v", err)
	}
	if l.Err() != nil {
		t.Fatalf("the new holder: %v", l.Err())
	}
	l.Release()
}

// A holder killed without releasing leaves the lock unclean: Inspect says
// so once its key is gone; the next holder serves the lock-delay, Inspect
// says it does meanwhile, and names it; after it, Acquire returns.
func TestLockDelayInspected(t *testing.T) {
	const lockDelay = 700 * time.Millisecond
	tc := startCluster(t, 1)
	obs, c := tc.client(t), tc.client(t)
	ctx := ctxFor(t, 30*time.Second)
	const name = "/t/lockdelay"
	p := spawnPeer(t, peerConfig{endpoints: tc.endpoints(), ttl: time.Second, lockDelay: lockDelay})
	held := p.mustAcquire(ctx, name, false)
	p.kill()
	waitGone(t, obs, held.Key)
	st, err := Inspect(ctx, obs, name)
	if err != nil || st.State != proclock.StateAbsent || !st.Unclean {
		t.Fatalf("Inspect after the holder was killed = %+v, %v; want absent, unclean", st, err)
	}
	record := obs.Watch(ctx, name+HandoffSuffix, clientv3.WithRev(st.Revision+1))
	got := make(chan error, 1)
	var l *Lock
	go func() {
		var err error
		l, err = Acquire(ctx, c, name, Options{TTL: time.Second, LockDelay: lockDelay})
		got <- err
	}()
	for wr := range record {
		if h, ok := parseHandoff(wr.Events[len(wr.Events)-1].Kv.Value); ok && h.Delaying {
			break
		}
	}
	st, err = Inspect(ctx, obs, name)
	if err != nil || st.State != proclock.StateHeld || !st.LockDelay || st.Holder == nil || st.LockDelayUntil.IsZero() {
		t.Fatalf("Inspect during the lock-delay = %+v, %v; want held, by this process, in lock-delay", st, err)
	}
	if err := <-got; err != nil {
		t.Fatal(err)
	}
	if l.LockDelay() < lockDelay {
		t.Errorf("Acquire served %v of lock-delay; want at least %v", l.LockDelay(), lockDelay)
	}
	st, err = Inspect(ctx, obs, name)
	if err != nil || st.LockDelay || !st.HeldHere || st.Fence != l.Fence() || st.TTL != time.Second || st.TTLLeft < 0 {
		t.Errorf("Inspect after the lock-delay = %+v, %v; want held here, no delay, fence %d, TTL 1s", st, err, l.Fence())
	}
	l.Release()
}

// A margin that leaves nothing of the TTL is refused, and nothing is left.
func TestMarginTooLong(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	ctx := ctxFor(t, 30*time.Second)
	_, err := Acquire(ctx, c, "/t/margin", Options{TTL: time.Second, Margin: time.Second})
	if _, ok := errors.AsType[*proclock.Error](err); !ok {
		t.Fatalf("Acquire with a margin as long as the TTL = %v; want a *proclock.Error", err)
	}
	if n := countKeys(t, c, "/t/margin"); n != 0 {
		t.Fatalf("%d keys left", n)
	}
	if len(leases(t, c)) != 0 {
		t.Fatalf("a lease left")
	}
}

func countKeys(t *testing.T, c *clientv3.Client, name string) int64 {
	t.Helper()
	resp, err := c.Get(ctxFor(t, 10*time.Second), name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Count
}
