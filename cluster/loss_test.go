package cluster

import (
	"context"
	"fmt"
	"sync"
	"syscall"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The holder's connection blackholed at a random phase of its keepalives:
// it learns of the loss (Lost) before an observer's watch sees the server
// delete its key, in every run. Holders are real processes, each behind
// its own proxy; the worst margin is logged.
func TestBlackholeLostBeforeExpiry(t *testing.T) {
	const ttl = 2 * time.Second
	n, worst := blackholeRuns(t, "/t/blackhole", ttl, func(px *proxy, dels *deletions, name string) func(time.Duration) (time.Duration, error) {
		p := spawnPeer(t, peerConfig{endpoints: []string{px.addr()}, ttl: ttl, lockDelay: -1})
		return func(ph time.Duration) (time.Duration, error) {
			r := blackholeRound(p, px, dels, name, ph)
			return r.margin, r.err
		}
	})
	t.Logf("%d blackholed holders (TTL %v, default margin): Lost fired before the server's delete by at least %v (worst run)", n, ttl, worst)
}

// blackholeRuns is the harness of the blackhole cases: 10 holders, each
// behind its own proxy in front of one member, 5 rounds each at random
// phases of ttl, side by side. holder prepares one holder of the lock
// name (its deletions watched by an observer) and returns its round: the
// margin by which the holder's reaction to the blackhole came before the
// server's delete of its key. It fails t for each round's error or a
// margin not above 0, and returns the rounds counted and the worst margin.
func blackholeRuns(t *testing.T, prefix string, ttl time.Duration, holder func(px *proxy, dels *deletions, name string) func(ph time.Duration) (time.Duration, error)) (int, time.Duration) {
	t.Helper()
	const holders, rounds = 10, 5
	tc := startCluster(t, 1)
	obs := tc.client(t)
	rnd := seeded(t)
	type result struct {
		margin time.Duration
		err    error
	}
	results := make(chan result, holders*rounds)
	var wg sync.WaitGroup
	for h := range holders {
		name := fmt.Sprintf("%s/%d", prefix, h)
		dels := watchDeletions(t, obs, name+"/")
		round := holder(newProxy(t, tc.endpoints()[0]), dels, name)
		phases := make([]time.Duration, rounds)
		for i := range phases {
			phases[i] = phase(rnd, ttl)
		}
		wg.Go(func() {
			for _, ph := range phases {
				m, err := round(ph)
				results <- result{m, err}
			}
		})
	}
	wg.Wait()
	close(results)
	worst := time.Duration(1<<63 - 1)
	n := 0
	for r := range results {
		switch {
		case r.err != nil:
			t.Error(r.err)
		case r.margin <= 0:
			t.Errorf("the holder reacted to its loss %v after the server deleted its key", -r.margin)
		default:
			n++
			worst = min(worst, r.margin)
		}
	}
	return n, worst
}

// blackholeRound takes the lock, blackholes the holder after ph, and
// measures how long before the key's deletion the holder said lost.
func blackholeRound(p *peer, px *proxy, dels *deletions, name string, ph time.Duration) (r struct {
	margin time.Duration
	err    error
}) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	acq, err := p.acquire(ctx, name, true)
	if err != nil {
		r.err = fmt.Errorf("acquire: %w", err)
		return r
	}
	time.Sleep(ph) // the random phase: not waiting for anything
	px.setBlackhole(true)
	lost, ok := p.nextLoss(10 * time.Second)
	deleted, dok := dels.of(acq.Key, 10*time.Second)
	px.cut()
	px.setBlackhole(false)
	p.release(name)
	switch {
	case !ok:
		r.err = fmt.Errorf("phase %v: no loss told within 10 s of the blackhole", ph)
	case !dok:
		r.err = fmt.Errorf("phase %v: the server did not delete the key within 10 s", ph)
	default:
		r.margin = deleted.Sub(lost.at)
	}
	return r
}

// A holder process stopped (SIGSTOP) past its TTL: the waiter takes the
// lock only after the lock-delay (its predecessor never let go cleanly),
// the resumed holder learns of its loss at once, and its write fenced with
// the old token is refused while the new holder's passes.
func TestStoppedHolder(t *testing.T) {
	const ttl, lockDelay = time.Second, 500 * time.Millisecond
	tc := startCluster(t, 1)
	obs := tc.client(t)
	rnd := seeded(t)
	cfg := peerConfig{endpoints: tc.endpoints(), ttl: ttl, lockDelay: lockDelay}
	for round := range 3 {
		name := fmt.Sprintf("/t/stopped/%d", round)
		dels := watchDeletions(t, obs, name+"/")
		a, b := spawnPeer(t, cfg), spawnPeer(t, cfg)
		ctx := ctxFor(t, 30*time.Second)
		held := a.mustAcquire(ctx, name, false)
		took := make(chan peerResponse, 1)
		tookAt := make(chan time.Time, 1)
		go func() {
			r, _ := b.acquire(ctx, name, true)
			tookAt <- time.Now()
			took <- r
		}()
		time.Sleep(phase(rnd, ttl)) // the random phase: not waiting for anything
		a.signal(syscall.SIGSTOP)
		deleted, ok := dels.of(held.Key, 10*time.Second)
		if !ok {
			a.signal(syscall.SIGCONT)
			t.Fatalf("round %d: the stopped holder's key was not deleted within 10 s", round)
		}
		at, r := <-tookAt, <-took
		if r.Err != nil {
			a.signal(syscall.SIGCONT)
			t.Fatalf("round %d: waiter: %v", round, r.Err.toError(name))
		}
		if !at.After(deleted) || r.Delay < lockDelay {
			t.Errorf("round %d: the waiter took the lock %v after the stopped holder's key went, having served a lock-delay of %v; want after it, and at least %v", round, at.Sub(deleted), r.Delay, lockDelay)
		}
		if r.Fence <= held.Fence {
			t.Errorf("round %d: new fence %d, old %d; want it to rise", round, r.Fence, held.Fence)
		}
		resumed := time.Now()
		a.signal(syscall.SIGCONT)
		lost, ok := a.nextLoss(10 * time.Second)
		if !ok {
			t.Fatalf("round %d: the resumed holder did not learn of its loss", round)
		}
		t.Logf("round %d: resumed holder told of its loss %v after SIGCONT (%s)", round, lost.at.Sub(resumed), lost.cause)
		if put := a.call(ctx, peerRequest{Op: "put", Name: name, Key: name + "-resource", Value: "stale"}); put.Err != nil || put.OK {
			t.Errorf("round %d: the old holder's fenced write: ok %v, %v; want refused", round, put.OK, put.Err.toError(name))
		}
		if put := b.call(ctx, peerRequest{Op: "put", Name: name, Key: name + "-resource", Value: "fresh"}); put.Err != nil || !put.OK {
			t.Errorf("round %d: the new holder's fenced write: ok %v, %v; want it done", round, put.OK, put.Err.toError(name))
		}
		if err := b.release(name); err != nil {
			t.Fatal(err)
		}
		a.kill()
		b.kill()
	}
}

// A revoke of the holder's lease, or a delete of its key, by another
// client is seen through the holder's watch on its own key, not at the
// next keepalive (TTL/3, 10 s here) nor at the deadline: the loss told is
// ErrKeyGone, which only the watch gives (a keepalive would say
// ErrLeaseGone, the deadline ErrDeadline). How soon is a figure, not an
// assertion (a shared machine's noise): it is logged here, and
// BenchmarkLossSeen measures it (docs/cluster.md, "How it is proven").
func TestRevokeAndDeleteSeen(t *testing.T) {
	const ttl = 30 * time.Second
	tc := startCluster(t, 1)
	other := tc.client(t)
	p := spawnPeer(t, peerConfig{endpoints: tc.endpoints(), ttl: ttl, lockDelay: -1})
	var worst time.Duration
	for i, how := range []string{"revoke", "delete", "revoke", "delete", "revoke", "delete"} {
		name := fmt.Sprintf("/t/revoke/%d", i)
		ctx := ctxFor(t, 30*time.Second)
		held := p.mustAcquire(ctx, name, false)
		start := time.Now()
		var err error
		if how == "revoke" {
			_, err = other.Revoke(ctx, clientv3.LeaseID(held.Lease))
		} else {
			_, err = other.Delete(ctx, held.Key)
		}
		if err != nil {
			t.Fatal(err)
		}
		// A hang's bound, not a figure: the first keepalive goes at
		// TTL/3, the deadline is near the TTL.
		lost, ok := p.nextLoss(ttl)
		if !ok {
			t.Fatalf("%s: no loss told within the TTL", how)
		}
		took := lost.at.Sub(start)
		worst = max(worst, took)
		t.Logf("%s: loss told %v after it (%s)", how, took, lost.cause)
		if !lost.keyGone {
			t.Errorf("%s: the loss told is %q; want the key's watch's (ErrKeyGone), not a keepalive's or the deadline's", how, lost.cause)
		}
		p.release(name)
	}
	t.Logf("worst: %v", worst)
}
