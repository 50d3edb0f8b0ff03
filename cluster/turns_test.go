package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"
)

// Ten processes take the lock in turns, five times each: no two hold at
// once (an occupancy key only one can create), the counter they keep
// under a transaction fenced with the lock's guard ends at 50, and every
// holder's fence is above the last one written beside the counter.
func TestTenProcessesTakeTurns(t *testing.T) {
	const procs, rounds = 10, 5
	tc := startCluster(t, 1)
	obs := tc.client(t)
	const name, data = "/t/turns", "/t/turns-data"
	var peers []*peer
	for range procs {
		peers = append(peers, spawnPeer(t, peerConfig{endpoints: tc.endpoints(), ttl: 2 * time.Second, lockDelay: time.Second}))
	}
	ctx := ctxFor(t, 2*time.Minute)
	results := make([]peerResponse, procs)
	var wg sync.WaitGroup
	for i, p := range peers {
		wg.Go(func() { results[i] = p.call(ctx, peerRequest{Op: "turns", Name: name, Key: data, Rounds: rounds}) })
	}
	wg.Wait()
	var fences []int64
	for i, r := range results {
		if r.Err != nil {
			t.Fatalf("peer %d: %v", i, r.Err.toError(name))
		}
		if r.Overlaps != 0 || r.Refused != 0 {
			t.Errorf("peer %d: %d overlaps, %d fences not above the last; want none", i, r.Overlaps, r.Refused)
		}
		if !slices.IsSorted(r.Fences) || len(r.Fences) != rounds {
			t.Errorf("peer %d: fences %v; want %d, rising", i, r.Fences, rounds)
		}
		fences = append(fences, r.Fences...)
	}
	slices.Sort(fences)
	if len(slices.Compact(fences)) != procs*rounds {
		t.Errorf("fences %v: some were handed out twice", fences)
	}
	resp, err := obs.Get(context.Background(), data+"/counter")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 {
		t.Fatal("no counter")
	}
	if n, _ := strconv.Atoi(string(resp.Kvs[0].Value)); n != procs*rounds {
		t.Errorf("counter = %d; want %d", n, procs*rounds)
	}
	last, err := obs.Get(context.Background(), data+"/fence")
	if err != nil || len(last.Kvs) != 1 || string(last.Kvs[0].Value) != fmt.Sprint(fences[len(fences)-1]) {
		t.Errorf("last fence written %v, %v; want the highest handed out, %d", last, err, fences[len(fences)-1])
	}
}
