package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// MechanismEtcd names the cluster backend in a Status, beside the root
// package's MechanismSQLite and MechanismFile.
const MechanismEtcd proclock.Mechanism = "etcd"

// DefaultTTL is the lease TTL when Options.TTL is zero: etcdctl lock's
// default.
const DefaultTTL = 10 * time.Second

// Options tune Acquire.
type Options struct {
	// Wait makes Acquire wait for the holder to let go, until ctx ends.
	Wait bool
	// TTL is the lease's time to live, in whole seconds (rounded up);
	// zero means DefaultTTL. The server may grant more (never less than
	// its minimum, 1.5 election timeouts rounded up), and the lock uses
	// what it grants. A holder that stops renewing (killed, cut off)
	// keeps the lock from others for up to this long.
	TTL time.Duration
	// Margin is how long before the server could expire the lease the
	// local deadline falls (Lock.Deadline): the time the holder has to
	// stop acting once Lost fires, before anyone else can hold the lock.
	// Zero means a tenth of the TTL, at least 100 ms. It must be less
	// than the TTL.
	Margin time.Duration
	// LockDelay is how long a new holder waits before Acquire returns
	// when its predecessor did not let go cleanly (killed, cut off,
	// paused): the time such a holder may still act, after it lost the
	// lock without knowing. Zero means the TTL; negative means none.
	LockDelay time.Duration
	// OnLockDelay, when set, is called as Acquire begins to serve a
	// lock-delay, with its length, so that a caller can say why it
	// waits (proclock run -v does).
	OnLockDelay func(delay time.Duration)
}

// ttl is the TTL to ask for, in seconds.
func (o Options) ttl() int64 {
	t := o.TTL
	if t <= 0 {
		t = DefaultTTL
	}
	return int64((t + time.Second - 1) / time.Second)
}

// margin is the margin for a granted TTL.
func (o Options) margin(granted time.Duration) time.Duration {
	if o.Margin > 0 {
		return o.Margin
	}
	return max(granted/10, 100*time.Millisecond)
}

// lockDelay is the lock-delay for a granted TTL.
func (o Options) lockDelay(granted time.Duration) time.Duration {
	switch {
	case o.LockDelay < 0:
		return 0
	case o.LockDelay == 0:
		return granted
	}
	return o.LockDelay
}

// Lock is a held cluster lock: a key NAME/<lease> with the oldest create
// revision under NAME/, on a lease that this Lock keeps alive until
// Release or loss.
type Lock struct {
	c       *clientv3.Client
	name    string
	key     string
	lease   clientv3.LeaseID
	fence   int64
	ttl     time.Duration
	holder  *platform.Identity
	since   time.Time
	delayed time.Duration
	k       *keeper

	mu       sync.Mutex
	released bool
}

// Name returns the lock's name, as given to Acquire.
func (l *Lock) Name() string { return l.name }

// Key returns the lock's key in etcd: NAME/<lease id in hex>.
func (l *Lock) Key() string { return l.key }

// Lease returns the lease the key is attached to; it belongs to this
// acquisition alone.
func (l *Lock) Lease() clientv3.LeaseID { return l.lease }

// TTL returns the lease's TTL as the server granted it.
func (l *Lock) TTL() time.Duration { return l.ttl }

// Holder returns the identity recorded for this holder; nil when this
// process's identity is unknown.
func (l *Lock) Holder() *platform.Identity { return l.holder }

// Since returns when Acquire took the lock, by this host's clock.
func (l *Lock) Since() time.Time { return l.since }

// LockDelay returns how long Acquire waited before returning because the
// previous holder had not let go cleanly; zero when it had.
func (l *Lock) LockDelay() time.Duration { return l.delayed }

// Fence returns the fencing token: the create revision of the lock's key.
// It rises strictly from each holder of the lock to the next, so that a
// resource that remembers the highest token it has seen can refuse a
// holder that has lost the lock (see Guard, and docs/cluster.md).
func (l *Lock) Fence() int64 { return l.fence }

// Guard returns the comparison that holds while this Lock still holds its
// key: put it in the If of an etcd transaction, and the transaction fails
// once the lock has passed on (lease expired or revoked, key deleted):
//
//	resp, err := c.Txn(ctx).If(lock.Guard()).Then(clientv3.OpPut(k, v)).Commit()
//	// resp.Succeeded is false when the lock was no longer held.
func (l *Lock) Guard() clientv3.Cmp {
	return clientv3.Compare(clientv3.CreateRevision(l.key), "=", l.fence)
}

// Lost returns a channel that is closed once the lock is known to be
// lost: its local deadline passed without a renewal (before the server
// can expire the lease, by Options.Margin), the server said the lease is
// gone, or the key was deleted or replaced. A clean Release never closes
// it. Err says why.
func (l *Lock) Lost() <-chan struct{} { return l.k.lost }

// Err returns nil while the lock is held and after a clean Release; once
// it is lost, a *proclock.LostError (matching proclock.ErrLost) wrapping
// the cause: ErrDeadline, ErrLeaseGone or ErrKeyGone.
func (l *Lock) Err() error { return l.k.cause() }

// Deadline returns the local deadline: the moment, on this host's
// monotonic clock, when Lost fires unless a keepalive is acknowledged
// first. It moves forward with each renewal; the server cannot expire the
// lease before Deadline plus the margin (docs/cluster.md, "Loss").
func (l *Lock) Deadline() time.Time { return l.k.deadline() }

// Release lets go of the lock: it deletes the key if, and only if, it is
// still this acquisition's (compare on its create revision), records a
// clean release for the next holder, then revokes the lease. A retry after
// a reply lost on the way back deletes nothing else. Calling it again
// after it succeeded does nothing. After a loss it only revokes what is
// left of the lease and records no clean release; Err keeps the loss. Its
// error is a *proclock.Error.
func (l *Lock) Release() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.released {
		return nil
	}
	held.forget(l.key)
	bound, cancel := context.WithTimeout(context.Background(), releaseBound(l.ttl))
	defer cancel()
	each := attemptBound(l.ttl)
	if l.k.cause() == nil {
		l.k.hush()
		rec := handoff{Key: l.key, Fence: l.fence, Lease: leaseHex(int64(l.lease)), Holder: l.holder, AcquiredAt: l.since, Released: true}
		resp, err := retried(bound, each, func(ctx context.Context) (*clientv3.TxnResponse, error) {
			return l.c.Txn(ctx).If(l.Guard()).Then(
				clientv3.OpDelete(l.key),
				clientv3.OpPut(l.name+HandoffSuffix, rec.marshal()),
			).Commit()
		})
		if err == nil && !resp.Succeeded && !l.releasedBefore(bound) {
			l.k.promote(fmt.Errorf("%w: found at release", ErrKeyGone))
		}
		l.k.close()
		if err != nil {
			return &proclock.Error{Op: "release", Path: l.name, Err: err}
		}
	} else {
		l.k.close()
	}
	if err := revoke(bound, each, l.c, l.lease); err != nil {
		return &proclock.Error{Op: "release", Path: l.name, Err: err}
	}
	l.released = true
	return nil
}

// releaseBound bounds a release (and the revoke of a failed acquisition)
// with a lease of TTL ttl: past the TTL the server lets the lease go by
// itself, unless it was restarted meanwhile, hence the floor.
func releaseBound(ttl time.Duration) time.Duration { return max(ttl, 3*time.Second) }

// attemptBound bounds each attempt of a release, so that a reply lost on
// the way leaves time for another.
func attemptBound(ttl time.Duration) time.Duration {
	return min(max(ttl/3, 300*time.Millisecond), 2*time.Second)
}

// releasedBefore reports whether a release whose compare failed finds that
// its own earlier attempt deleted the key (it committed, and its reply was
// lost on the way back): the key's deletion, read from etcd's history,
// came with this acquisition's clean release record.
func (l *Lock) releasedBefore(ctx context.Context) bool {
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for wr := range l.c.Watch(wctx, l.key, clientv3.WithRev(l.fence+1)) {
		if wr.Err() != nil {
			return false // compacted: unknown, so not clean
		}
		for _, ev := range wr.Events {
			if ev.Type != mvccpb.DELETE {
				return false
			}
			resp, err := l.c.Get(ctx, l.name+HandoffSuffix, clientv3.WithRev(ev.Kv.ModRevision))
			if err != nil || len(resp.Kvs) == 0 {
				return false
			}
			h, ok := parseHandoff(resp.Kvs[0].Value)
			return ok && h.Key == l.key && h.Fence == l.fence && h.Released && resp.Kvs[0].ModRevision == ev.Kv.ModRevision
		}
	}
	return false
}

// retried runs op, each attempt bounded by each, until it succeeds, ctx
// ends, or it fails in a way that trying again will not mend; op must be
// safe to repeat.
func retried[T any](ctx context.Context, each time.Duration, op func(context.Context) (T, error)) (T, error) {
	for {
		attempt, cancel := context.WithTimeout(ctx, each)
		v, err := op(attempt)
		cancel()
		if err == nil || ctx.Err() != nil || !transient(err) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, err
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// transient reports whether err may pass on a retry: a timeout, an
// unavailable server, a leader being elected.
func transient(err error) bool {
	if errors.Is(err, context.Canceled) {
		return false
	}
	return errors.Is(err, context.DeadlineExceeded) || clientv3.IsConnCanceled(err) || isUnavailable(err)
}

// revoke revokes lease; a lease already gone is revoked.
func revoke(ctx context.Context, each time.Duration, c *clientv3.Client, lease clientv3.LeaseID) error {
	_, err := retried(ctx, each, func(ctx context.Context) (*clientv3.LeaseRevokeResponse, error) {
		return c.Revoke(ctx, lease)
	})
	if err != nil && isLeaseNotFound(err) {
		return nil
	}
	return err
}

// heldHere is the keys this process holds, for Inspect's HeldHere.
type heldHere struct {
	mu   sync.Mutex
	keys map[string]bool
}

var held = &heldHere{keys: map[string]bool{}}

func (h *heldHere) add(key string) {
	h.mu.Lock()
	h.keys[key] = true
	h.mu.Unlock()
}

func (h *heldHere) forget(key string) {
	h.mu.Lock()
	delete(h.keys, key)
	h.mu.Unlock()
}

func (h *heldHere) has(key string) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.keys[key]
}
