package cluster

import (
	"context"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"
)

// seeded is a source of random phases, its seed logged; PROCLOCK_SEED
// replays one.
func seeded(t testing.TB) *rand.Rand {
	t.Helper()
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("PROCLOCK_SEED"); s != "" {
		v, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("PROCLOCK_SEED=%q: %v", s, err)
		}
		seed = v
	}
	t.Logf("random phases: PROCLOCK_SEED=%d", seed)
	return rand.New(rand.NewPCG(seed, seed>>1|1))
}

// phase is a random duration in [0, d).
func phase(r *rand.Rand, d time.Duration) time.Duration { return time.Duration(r.Int64N(int64(d))) }

// deletions watches the keys under prefix and stamps each deletion with
// the moment it arrived here.
type deletions struct {
	ch chan deletion
}

type deletion struct {
	key string
	at  time.Time
}

func watchDeletions(t testing.TB, c *clientv3.Client, prefix string) *deletions {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	d := &deletions{ch: make(chan deletion, 1024)}
	wch := c.Watch(ctx, prefix, clientv3.WithPrefix(), clientv3.WithFilterPut())
	ready := make(chan struct{})
	go func() {
		// The watch is established once a first (empty) progress
		// reply comes, or at once: a put below makes sure.
		close(ready)
		for wr := range wch {
			now := time.Now()
			for _, ev := range wr.Events {
				if ev.Type == mvccpb.DELETE {
					d.ch <- deletion{key: string(ev.Kv.Key), at: now}
				}
			}
		}
	}()
	<-ready
	return d
}

// of waits up to limit for key's deletion.
func (d *deletions) of(key string, limit time.Duration) (time.Time, bool) {
	timeout := time.After(limit)
	for {
		select {
		case ev := <-d.ch:
			if ev.key == key {
				return ev.at, true
			}
		case <-timeout:
			return time.Time{}, false
		}
	}
}

func leaseID(id int64) clientv3.LeaseID { return clientv3.LeaseID(id) }
