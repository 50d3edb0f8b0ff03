package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc"
)

// dropper drops, through its proxy, the reply to the next transaction its
// client sends once armed: the server commits it, and the client never
// hears. after, if set, runs once the call has failed, before the caller
// sees the failure.
type dropper struct {
	px    *proxy
	mu    sync.Mutex
	armed bool
	after func()
}

func (d *dropper) arm(after func()) {
	d.mu.Lock()
	d.armed, d.after = true, after
	d.mu.Unlock()
}

func (d *dropper) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	if method != "/etcdserverpb.KV/Txn" {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	d.mu.Lock()
	armed, after := d.armed, d.after
	d.armed, d.after = false, nil
	d.mu.Unlock()
	if !armed {
		return invoker(ctx, method, req, reply, cc, opts...)
	}
	d.px.setDropReplies(true)
	err := invoker(ctx, method, req, reply, cc, opts...)
	// The stream lost bytes: start afresh, on connections that drop
	// nothing (in this order: one made in between would lose its
	// handshake, and stall for gRPC's connect timeout).
	d.px.setDropReplies(false)
	d.px.cut()
	if err == nil {
		err = errors.New("dropper: the reply came through")
	}
	if after != nil {
		after()
	}
	return err
}

func droppingClient(t *testing.T, tc *testCluster) (*clientv3.Client, *dropper) {
	d := &dropper{px: newProxy(t, tc.endpoints()[0])}
	return newClient(t, []string{d.px.addr()}, grpc.WithChainUnaryInterceptor(d.intercept)), d
}

// leases is the leases the server knows.
func leases(t *testing.T, c *clientv3.Client) map[clientv3.LeaseID]bool {
	t.Helper()
	resp, err := c.Leases(ctxFor(t, 10*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	m := map[clientv3.LeaseID]bool{}
	for _, l := range resp.Leases {
		m[l.ID] = true
	}
	return m
}

// The reply to the acquiring transaction is lost, free lock or held, with
// and without waiting: Acquire fails, and neither its key nor its lease
// is left behind (the outcome was unknown, so it revoked the lease).
func TestAcquireReplyDropped(t *testing.T) {
	tc := startCluster(t, 1)
	obs := tc.client(t)
	c, d := droppingClient(t, tc)
	for i, tcase := range []struct {
		held, wait bool
	}{{false, false}, {false, true}, {true, false}, {true, true}} {
		name := fmt.Sprintf("/t/acqdrop/%d", i)
		ctx := ctxFor(t, 30*time.Second)
		var holder *Lock
		if tcase.held {
			var err error
			if holder, err = Acquire(ctx, obs, name, Options{TTL: time.Second}); err != nil {
				t.Fatal(err)
			}
		}
		before := leases(t, obs)
		d.arm(nil)
		short, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
		l, err := Acquire(short, c, name, Options{TTL: 5 * time.Second, Wait: tcase.wait})
		cancel()
		if err == nil {
			l.Release()
			t.Fatalf("%+v: Acquire succeeded with its reply dropped", tcase)
		}
		resp, err := obs.Get(ctx, name+"/", clientv3.WithPrefix())
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if tcase.held {
			want = 1
		}
		if len(resp.Kvs) != want {
			t.Errorf("%+v: %d keys under the lock after the failed Acquire; want %d (no ghost)", tcase, len(resp.Kvs), want)
		}
		for id := range leases(t, obs) {
			if !before[id] {
				t.Errorf("%+v: lease %x left by the failed Acquire", tcase, int64(id))
			}
		}
		if holder != nil {
			if holder.Err() != nil {
				t.Errorf("%+v: the holder lost its lock: %v", tcase, holder.Err())
			}
			holder.Release()
		}
	}
}

// The reply to Release's compare-and-delete is lost, and before Release
// tries again this process takes the lock anew, on another lease: the
// retry deletes nothing of the new holder's, Release succeeds, the old
// lease is revoked, and the old Lock reports no loss (its own first
// attempt let go cleanly).
func TestReleaseReplyDropped(t *testing.T) {
	tc := startCluster(t, 1)
	obs := tc.client(t)
	c, d := droppingClient(t, tc)
	for i := range 3 {
		name := fmt.Sprintf("/t/reldrop/%d", i)
		ctx := ctxFor(t, 30*time.Second)
		old, err := Acquire(ctx, c, name, Options{TTL: 2 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		var newer *Lock
		var newerErr error
		d.arm(func() { newer, newerErr = Acquire(ctx, obs, name, Options{TTL: 2 * time.Second, Wait: true}) })
		if err := old.Release(); err != nil {
			t.Fatalf("Release: %v", err)
		}
		if newerErr != nil {
			t.Fatalf("re-acquiring: %v", newerErr)
		}
		resp, err := obs.Get(ctx, newer.Key())
		if err != nil {
			t.Fatal(err)
		}
		if len(resp.Kvs) != 1 || resp.Kvs[0].CreateRevision != newer.Fence() {
			t.Fatalf("the newer holder's key after the old one's retried release: %v; want it kept", resp.Kvs)
		}
		if newer.Err() != nil {
			t.Errorf("the newer holder lost its lock: %v", newer.Err())
		}
		if old.Err() != nil {
			t.Errorf("the old Lock reports %v; want no loss after its clean release", old.Err())
		}
		if newer.LockDelay() != 0 {
			t.Errorf("the newer holder served a lock-delay of %v after a clean release", newer.LockDelay())
		}
		ttl, err := obs.TimeToLive(ctx, old.Lease())
		if err != nil || ttl.TTL != -1 {
			t.Errorf("the old lease after Release: TTL %v, %v; want it revoked", ttl.TTL, err)
		}
		newer.Release()
	}
}
