package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
)

// revokeAfterGrant makes the first n leases granted for name gone before
// the transaction that writes the key with them, as a lease that expired
// on a loaded server between the grant and the transaction (review
// finding 12), and returns the leases granted for name, as seen so far.
func revokeAfterGrant(t *testing.T, c *clientv3.Client, name string, n int) func() []clientv3.LeaseID {
	t.Helper()
	var mu sync.Mutex
	var granted []clientv3.LeaseID
	afterGrant = func(got string, lease clientv3.LeaseID) {
		if got != name {
			return
		}
		mu.Lock()
		granted = append(granted, lease)
		revoke := len(granted) <= n
		mu.Unlock()
		if !revoke {
			return
		}
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if _, err := c.Revoke(ctx, lease); err != nil {
			t.Errorf("revoking lease %x: %v", int64(lease), err)
		}
	}
	t.Cleanup(func() { afterGrant = nil })
	return func() []clientv3.LeaseID {
		mu.Lock()
		defer mu.Unlock()
		return append([]clientv3.LeaseID(nil), granted...)
	}
}

// TestAcquireLeaseGoneBeforeKey: a lease gone between its grant and the
// key's transaction is replaced by a fresh one, and Acquire holds; when
// every lease goes so, Acquire gives up after leaseAttempts leases with
// an error matching ErrLeaseGone (the command's exit 123, not 2), leaving
// no key. Before the fix, the first such lease ended Acquire with
// "etcdserver: requested lease not found".
func TestAcquireLeaseGoneBeforeKey(t *testing.T) {
	tc := startCluster(t, 1)
	c := tc.client(t)
	for _, wait := range []bool{false, true} {
		name := "/t/leasegone-nowait"
		if wait {
			name = "/t/leasegone-wait"
		}
		t.Run(fmt.Sprintf("wait=%v/one lease gone", wait), func(t *testing.T) {
			leases := revokeAfterGrant(t, c, name, 1)
			l, err := Acquire(ctxFor(t, 30*time.Second), c, name, Options{TTL: 5 * time.Second, Wait: wait})
			if err != nil {
				t.Fatalf("Acquire after one lease gone = %v; want the lock, on a fresh lease", err)
			}
			defer l.Release()
			got := leases()
			if len(got) != 2 || l.Lease() != got[1] {
				t.Fatalf("leases granted %x, lock's lease %x; want two, the lock on the second", got, int64(l.Lease()))
			}
			if l.Err() != nil {
				t.Fatalf("fresh lock's Err = %v", l.Err())
			}
		})
		t.Run(fmt.Sprintf("wait=%v/every lease gone", wait), func(t *testing.T) {
			leases := revokeAfterGrant(t, c, name, 1000)
			_, err := Acquire(ctxFor(t, 30*time.Second), c, name, Options{TTL: 5 * time.Second, Wait: wait})
			if !errors.Is(err, ErrLeaseGone) || errors.Is(err, proclock.ErrHeld) {
				t.Fatalf("Acquire with every lease gone = %v; want ErrLeaseGone", err)
			}
			if _, ok := errors.AsType[*proclock.Error](err); !ok {
				t.Fatalf("Acquire's error %v is not a *proclock.Error", err)
			}
			if got := leases(); len(got) != leaseAttempts {
				t.Fatalf("%d leases granted; want %d", len(got), leaseAttempts)
			}
			resp, err := c.Get(ctxFor(t, 10*time.Second), name+"/", clientv3.WithPrefix())
			if err != nil {
				t.Fatal(err)
			}
			if len(resp.Kvs) != 0 {
				t.Fatalf("left %d keys under %s/; want none", len(resp.Kvs), name)
			}
		})
	}
}
