package cluster

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"
)

// The holder's connection blackholed at a random phase of its keepalives:
// it learns of the loss (Lost) before an observer's watch sees the server
// delete its key, in every run. Holders are real processes, each behind
// its own proxy; the worst margin is logged.
func TestBlackholeLostBeforeExpiry(t *testing.T) {
	const holders, rounds = 10, 5
	const ttl = 2 * time.Second
	tc := startCluster(t, 1)
	obs := tc.client(t)
	rnd := seeded(t)
	dels := map[int]*deletions{}
	type result struct {
		margin time.Duration
		err    error
	}
	results := make(chan result, holders*rounds)
	var wg sync.WaitGroup
	for h := range holders {
		name := fmt.Sprintf("/t/blackhole/%d", h)
		dels[h] = watchDeletions(t, obs, name+"/")
		px := newProxy(t, tc.endpoints()[0])
		p := spawnPeer(t, peerConfig{endpoints: []string{px.addr()}, ttl: ttl, lockDelay: -1})
		phases := make([]time.Duration, rounds)
		for i := range phases {
			phases[i] = phase(rnd, ttl)
		}
		wg.Go(func() {
			for _, ph := range phases {
				results <- blackholeRound(p, px, dels[h], name, ph)
			}
		})
	}
	wg.Wait()
	close(results)
	worst := time.Duration(1<<63 - 1)
	n := 0
	for r := range results {
		if r.err != nil {
			t.Error(r.err)
			continue
		}
		n++
		worst = min(worst, r.margin)
		if r.margin <= 0 {
			t.Errorf("holder told of its loss %v after the server deleted its key", -r.margin)
		}
	}
	t.Logf("%d blackholed holders (TTL %v, default margin): Lost fired before the server's delete by at least %v (worst run)", n, ttl, worst)
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
