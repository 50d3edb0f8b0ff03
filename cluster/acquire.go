package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"go.etcd.io/etcd/api/v3/etcdserverpb"
	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/proclock/proclock"
)

// Acquire takes the lock name for this process, through c, on a lease of
// its own. Without opts.Wait it returns a *proclock.HeldError (matching
// proclock.ErrHeld) at once when the lock is held, by another process or
// by another acquisition in this one (there is no reentrancy); with it, it
// waits until the lock is free or ctx ends, and then returns an error
// matching ctx.Err() and proclock.ErrHeld.
//
// The held error names the holder: its identity (host, pid, process
// start) and since when, or, for a holder that records none (etcdctl
// lock), its lease in Reason.
//
// When the previous holder did not let go cleanly, Acquire waits
// opts.LockDelay (ctx permitting) before it returns. While it waits, its
// key is kept alive; if its lease dies, it returns an error at once,
// matching proclock.ErrLost and the cause (ErrDeadline, ErrLeaseGone,
// ErrKeyGone). It leaves nothing behind when it fails: when it cannot
// tell whether its key was created (the deadline passed in mid-call), it
// revokes its lease.
// A lease that expires between its grant and the transaction that writes
// the key with it (a server or a process too loaded for the TTL) is
// replaced by a fresh one, leaseAttempts leases in all, within ctx; when
// the last expires too, the error matches ErrLeaseGone.
// Its other errors are *proclock.Error.
func Acquire(ctx context.Context, c *clientv3.Client, name string, opts Options) (*Lock, error) {
	if err := ctx.Err(); err != nil {
		return nil, &proclock.Error{Op: "acquire", Path: name, Err: err}
	}
	if c == nil {
		return nil, &proclock.Error{Op: "acquire", Path: name, Err: errors.New("no etcd client")}
	}
	if name == "" {
		return nil, &proclock.Error{Op: "acquire", Path: name, Err: errors.New("empty lock name")}
	}
	for attempt := 1; ; attempt++ {
		a := &acquisition{c: c, name: name, opts: opts}
		l, err := a.run(ctx)
		if err == nil {
			held.add(l.key)
			return l, nil
		}
		a.abandon()
		if errors.Is(err, errLeaseBeforeKey) {
			if attempt < leaseAttempts && ctx.Err() == nil {
				continue
			}
			err = fmt.Errorf("%w: %d leases in a row expired between their grant and the write of the lock's key (the server or this process too slow for the TTL %v): %w",
				ErrLeaseGone, attempt, a.ttl, err)
		}
		if _, ok := errors.AsType[*proclock.Error](err); ok || errors.Is(err, proclock.ErrHeld) {
			return nil, err
		}
		return nil, &proclock.Error{Op: "acquire", Path: name, Err: err}
	}
}

// leaseAttempts bounds the leases an Acquire is granted when each
// expires before the lock's key is written with it (a server or a process
// so loaded that the TTL ran out between the grant and the transaction):
// the first attempt and two more, within ctx.
const leaseAttempts = 3

// errLeaseBeforeKey marks the first transaction's failure for a lease
// already gone: nothing was written with it, so a fresh lease may try
// again.
var errLeaseBeforeKey = errors.New("lease gone before the lock's key was written")

// afterGrant, when set (by tests only), is called with the lock's name and
// the lease just granted, before the transaction that writes the key.
var afterGrant func(name string, lease clientv3.LeaseID)

// acquisition is one Acquire under way.
type acquisition struct {
	c     *clientv3.Client
	name  string
	opts  Options
	lease clientv3.LeaseID
	ttl   time.Duration
	k     *keeper
	key   string
	rev   int64 // the key's create revision, once created
	// foreign is the create revisions of keys older than ours that this
	// package did not write (etcdctl's): they record no clean release.
	foreign []int64
	// holder is the oldest key last seen, for a wait that gives up.
	holder *mvccpb.KeyValue
	// delayServed is the lock-delay Acquire waited.
	delayServed time.Duration
}

func (a *acquisition) prefix() string { return a.name + "/" }
func (a *acquisition) record() string { return a.name + HandoffSuffix }

func (a *acquisition) run(ctx context.Context) (*Lock, error) {
	sent := time.Now()
	grant, err := a.c.Grant(ctx, a.opts.ttl())
	if err != nil {
		return nil, err
	}
	a.lease, a.ttl = grant.ID, time.Duration(grant.TTL)*time.Second
	margin := a.opts.margin(a.ttl)
	if margin >= a.ttl {
		return nil, fmt.Errorf("margin %v is not less than the TTL granted, %v", margin, a.ttl)
	}
	a.k = startKeeper(a.c, a.name, a.lease, a.ttl, margin, sent)
	a.key = a.prefix() + leaseHex(int64(a.lease))

	resp, err := a.enqueue(ctx)
	if err != nil {
		return nil, err
	}
	var prev *handoff
	switch {
	case resp.Succeeded:
		a.rev = resp.Header.Revision
		a.k.watchKey(a.key, a.rev, a.rev+1)
		prev = firstHandoff(resp.Responses[1])
	case !a.opts.Wait:
		kvs := resp.Responses[0].GetResponseRange().GetKvs()
		if len(kvs) == 0 {
			// Freed between the compare and the read: a
			// transaction sees one revision, so this is not
			// reached; say held by nobody known rather than
			// retry.
			return nil, &proclock.HeldError{Path: a.name}
		}
		return nil, heldBy(a.name, kvs[0], firstHandoff(resp.Responses[1]))
	default:
		a.rev = resp.Header.Revision
		a.k.watchKey(a.key, a.rev, a.rev+1)
		a.seeOlder(resp.Responses[1].GetResponseRange().GetKvs())
		if prev, err = a.wait(ctx); err != nil {
			return nil, err
		}
	}
	if err := a.serveDelay(ctx, prev); err != nil {
		return nil, err
	}
	return &Lock{c: a.c, name: a.name, key: a.key, lease: a.lease, fence: a.rev, ttl: a.ttl,
		holder: self(), since: time.Now(), delayed: a.delayServed, k: a.k}, nil
}

// enqueue writes the acquisition's key, in one transaction with the
// handoff record when the lock is free; without Wait, a held lock is only
// read.
func (a *acquisition) enqueue(ctx context.Context) (*clientv3.TxnResponse, error) {
	me := queued{Format: keyFormat, QueuedAt: time.Now(), TTL: int64(a.ttl / time.Second), User: userName(), Command: os.Args}
	if id := self(); id != nil {
		me.Identity = *id
	}
	put := clientv3.OpPut(a.key, marshalQueued(me), clientv3.WithLease(a.lease))
	free := clientv3.Compare(clientv3.CreateRevision(a.prefix()), "=", 0).WithPrefix()
	taking := handoff{Key: a.key, Lease: leaseHex(int64(a.lease)), Holder: self(), AcquiredAt: me.QueuedAt}
	otherwise := []clientv3.Op{clientv3.OpGet(a.prefix(), append(clientv3.WithFirstCreate(), clientv3.WithPrefix())...), clientv3.OpGet(a.record())}
	if a.opts.Wait {
		otherwise = []clientv3.Op{put, clientv3.OpGet(a.prefix(), clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))}
	}
	if afterGrant != nil {
		afterGrant(a.name, a.lease)
	}
	lctx, cancel := a.leased(ctx)
	defer cancel()
	resp, err := a.c.Txn(lctx).If(free).Then(put, clientv3.OpGet(a.record()), clientv3.OpPut(a.record(), taking.marshal())).Else(otherwise...).Commit()
	if err != nil {
		if isLeaseNotFound(err) {
			// The lease expired (or was revoked) before the
			// transaction: it wrote nothing, since a put with a
			// lease that is gone fails the whole transaction.
			return nil, fmt.Errorf("lease %x: %w: %w", int64(a.lease), errLeaseBeforeKey, err)
		}
		// The key may or may not exist: abandon revokes the lease.
		if lost := a.k.cause(); lost != nil {
			return nil, a.lostWaiting(errors.Unwrap(lost))
		}
		return nil, err
	}
	return resp, nil
}

// seeOlder notes the keys older than ours in kvs (sorted by create
// revision): the holder, and those etcdctl wrote.
func (a *acquisition) seeOlder(kvs []*mvccpb.KeyValue) []*mvccpb.KeyValue {
	var older []*mvccpb.KeyValue
	for _, kv := range kvs {
		if kv.CreateRevision >= a.rev {
			continue
		}
		older = append(older, kv)
		if _, ok := parseQueued(kv.Value); !ok {
			a.foreign = append(a.foreign, kv.CreateRevision)
		}
	}
	if len(older) > 0 {
		a.holder = older[0]
	}
	return older
}

// wait waits until no key older than ours is left, watching the newest of
// them (each waiter watches only the one before it), and then records
// this acquisition as the holder. It returns the handoff record it found.
func (a *acquisition) wait(ctx context.Context) (*handoff, error) {
	lctx, cancel := a.leased(ctx)
	defer cancel()
	for {
		resp, err := a.c.Get(lctx, a.prefix(), clientv3.WithPrefix(), clientv3.WithMaxCreateRev(a.rev-1),
			clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend))
		if err != nil {
			if err := a.stopped(ctx); err != nil {
				return nil, err
			}
			if !transient(err) {
				return nil, err
			}
			continue
		}
		older := a.seeOlder(resp.Kvs)
		if len(older) == 0 {
			return a.take(ctx)
		}
		if err := a.waitDelete(ctx, string(older[len(older)-1].Key), resp.Header.Revision+1); err != nil {
			return nil, err
		}
	}
}

// waitDelete waits for key to be deleted, watching from revision rev. It
// returns nil also when the watch ends for another reason (compacted,
// cut): the caller reads again.
func (a *acquisition) waitDelete(ctx context.Context, key string, rev int64) error {
	// Leased: Watch returns only once the server has created the watch
	// (or its ctx ended), and a member cut off never answers.
	wctx, cancel := a.leased(clientv3.WithRequireLeader(ctx))
	defer cancel()
	wch := a.c.Watch(wctx, key, clientv3.WithRev(rev), clientv3.WithFilterPut())
	for {
		select {
		case <-ctx.Done():
			return a.gaveUp(ctx)
		case <-a.k.lost:
			return a.stopped(ctx)
		case wr, ok := <-wch:
			if !ok || wr.Canceled || wr.Err() != nil || len(wr.Events) > 0 {
				return a.stopped(ctx)
			}
		}
	}
}

// stopped is the error that ends a wait: the lease's loss, the caller's
// giving up, or nil.
func (a *acquisition) stopped(ctx context.Context) error {
	if lost := a.k.cause(); lost != nil {
		return a.lostWaiting(errors.Unwrap(lost))
	}
	if ctx.Err() != nil {
		return a.gaveUp(ctx)
	}
	return nil
}

// gaveUp is the error of a wait that ctx ended: ctx's, and held by the
// holder last seen.
func (a *acquisition) gaveUp(ctx context.Context) error {
	h := &proclock.HeldError{Path: a.name}
	if a.holder != nil {
		h = heldBy(a.name, a.holder, nil)
	}
	return fmt.Errorf("%w while waiting: %w", ctx.Err(), h)
}

// take records this acquisition as the holder, now that its key is the
// oldest, if the key is still there.
func (a *acquisition) take(ctx context.Context) (*handoff, error) {
	taking := handoff{Key: a.key, Fence: a.rev, Lease: leaseHex(int64(a.lease)), Holder: self(), AcquiredAt: time.Now()}
	lctx, cancel := a.leased(ctx)
	defer cancel()
	resp, err := a.c.Txn(lctx).If(clientv3.Compare(clientv3.CreateRevision(a.key), "=", a.rev)).
		Then(clientv3.OpGet(a.record()), clientv3.OpPut(a.record(), taking.marshal())).Commit()
	if err != nil {
		if err := a.stopped(ctx); err != nil {
			return nil, err
		}
		return nil, err
	}
	if !resp.Succeeded {
		return nil, a.lostWaiting(fmt.Errorf("%w: found when taking the lock", ErrKeyGone))
	}
	return firstHandoff(resp.Responses[0]), nil
}

// leased is ctx, ended also once the waiter's lease is lost: a read, a
// write or a watch's creation that hangs (its member cut off) must not
// outlast the lease.
func (a *acquisition) leased(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-a.k.lost:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// lostWaiting is the error of a wait that the waiter's own lease ended
// (revoked, its key deleted, not renewed in time): a *proclock.LostError,
// so that it matches proclock.ErrLost and cause.
func (a *acquisition) lostWaiting(cause error) error {
	return fmt.Errorf("lease lost while waiting: %w", &proclock.LostError{Path: a.name, Err: cause})
}

// unclean reports whether the lock's previous holder may not have let go
// cleanly: the record names another acquisition that did not record a
// clean release, or a key etcdctl wrote (which records none) may have
// held after the one the record names.
func (a *acquisition) unclean(prev *handoff) bool {
	if prev != nil && prev.Key != a.key && !prev.Released {
		return true
	}
	var after int64
	if prev != nil {
		after = prev.Fence
	}
	for _, rev := range a.foreign {
		if rev > after {
			return true
		}
	}
	return false
}

// serveDelay waits the lock-delay when the handoff was unclean, saying so
// in the handoff record while it does.
func (a *acquisition) serveDelay(ctx context.Context, prev *handoff) error {
	delay := a.opts.lockDelay(a.ttl)
	if delay <= 0 || !a.unclean(prev) {
		return nil
	}
	start := time.Now()
	if a.opts.OnLockDelay != nil {
		a.opts.OnLockDelay(delay)
	}
	rec := handoff{Key: a.key, Fence: a.rev, Lease: leaseHex(int64(a.lease)), Holder: self(), AcquiredAt: start,
		Delaying: true, DelayUntil: start.Add(delay)}
	mine := clientv3.Compare(clientv3.CreateRevision(a.key), "=", a.rev)
	lctx, cancel := a.leased(ctx)
	defer cancel()
	// The record only informs Inspect: its write failing stops nothing.
	a.c.Txn(lctx).If(mine).Then(clientv3.OpPut(a.record(), rec.marshal())).Commit()
	timer := time.NewTimer(delay)
	defer timer.Stop()
	select {
	case <-timer.C:
	case <-ctx.Done():
		return fmt.Errorf("%w while serving the lock-delay after an unclean handoff", ctx.Err())
	case <-a.k.lost:
		return a.stopped(ctx)
	}
	a.delayServed = time.Since(start)
	rec.Delaying, rec.AcquiredAt = false, time.Now()
	a.c.Txn(lctx).If(mine).Then(clientv3.OpPut(a.record(), rec.marshal())).Commit()
	return nil
}

// abandon undoes a failed acquisition: it revokes the lease (and so the
// key, created or not), bounded by the TTL.
func (a *acquisition) abandon() {
	if a.k != nil {
		a.k.close()
	}
	if a.lease == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), releaseBound(a.ttl))
	defer cancel()
	revoke(ctx, attemptBound(a.ttl), a.c, a.lease)
}

// heldBy is the held error for the holder kv, with the handoff record rec
// (nil when not read).
func heldBy(name string, kv *mvccpb.KeyValue, rec *handoff) *proclock.HeldError {
	e := &proclock.HeldError{Path: name}
	q, ok := parseQueued(kv.Value)
	if !ok {
		e.Reason = fmt.Sprintf("an etcdctl lock (it records no identity), lease %x", kv.Lease)
		return e
	}
	if q.PID > 0 {
		id := q.Identity
		e.Holder = &id
	}
	e.Since = q.QueuedAt
	if rec != nil && rec.Key == string(kv.Key) && !rec.AcquiredAt.IsZero() {
		e.Since = rec.AcquiredAt
	}
	return e
}

// firstHandoff is the handoff record in a transaction's read of it.
func firstHandoff(r *etcdserverpb.ResponseOp) *handoff {
	for _, kv := range r.GetResponseRange().GetKvs() {
		if h, ok := parseHandoff(kv.Value); ok {
			return &h
		}
	}
	return nil
}

func isLeaseNotFound(err error) bool {
	return errors.Is(err, rpctypes.ErrLeaseNotFound) || status.Code(err) == codes.NotFound
}

func isUnavailable(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.DeadlineExceeded:
		return true
	}
	return errors.Is(err, rpctypes.ErrNoLeader) || errors.Is(err, rpctypes.ErrTimeout) ||
		errors.Is(err, rpctypes.ErrTimeoutDueToLeaderFail) || errors.Is(err, rpctypes.ErrTimeoutDueToConnectionLost)
}
