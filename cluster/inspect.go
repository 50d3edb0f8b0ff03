package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
)

// Status is Inspect's report on a cluster lock: the root package's
// Status (Path is the lock's name; State is StateAbsent or StateHeld;
// Mechanism is MechanismEtcd), and what etcd adds.
type Status struct {
	proclock.Status
	// Key is the holder's key (NAME/<lease in hex>); Fence its create
	// revision, the holder's fencing token; Lease its lease.
	Key   string `json:"key,omitempty"`
	Fence int64  `json:"fence,omitempty"`
	Lease int64  `json:"lease,omitempty"`
	// TTL is the holder's lease TTL as granted, TTLLeft what the server
	// says is left of it, in whole seconds (etcd's unit); TTL is zero when
	// unknown (the lease just went).
	TTL     time.Duration `json:"ttl,omitempty"`
	TTLLeft time.Duration `json:"ttlLeft,omitempty"`
	// Waiters is how many acquisitions wait behind the holder.
	Waiters int `json:"waiters"`
	// LockDelay is true while the holder serves the lock-delay after an
	// unclean handoff; until LockDelayUntil, by the holder's clock.
	LockDelay      bool      `json:"lockDelay,omitempty"`
	LockDelayUntil time.Time `json:"lockDelayUntil,omitzero"`
	// Unclean is true when the lock is free but its last holder did not
	// let go cleanly: the next holder will serve the lock-delay.
	Unclean bool `json:"unclean,omitempty"`
	// Revision is the etcd revision the report was read at.
	Revision int64 `json:"revision"`
}

// IsHeld reports whether anyone holds the lock name (another process, an
// acquisition in this one, an etcdctl lock), without taking it and without
// writing anything. The answer may be out of date by the time it arrives:
// only Acquire decides.
func IsHeld(ctx context.Context, c *clientv3.Client, name string) (bool, error) {
	if err := checkArgs(ctx, c, name); err != nil {
		return false, &proclock.Error{Op: "inspect", Path: name, Err: err}
	}
	resp, err := c.Get(ctx, name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		return false, &proclock.Error{Op: "inspect", Path: name, Err: err}
	}
	return resp.Count > 0, nil
}

// Inspect reports the state of the lock name: its holder (identity, or
// the lease of an etcdctl holder in Reason) and since when, its fencing
// token, lease and TTL left, its waiters, and whether a lock-delay is
// served. It writes nothing.
func Inspect(ctx context.Context, c *clientv3.Client, name string) (Status, error) {
	st := Status{Status: proclock.Status{Path: name, State: proclock.StateAbsent, Mechanism: MechanismEtcd}}
	if err := checkArgs(ctx, c, name); err != nil {
		return st, &proclock.Error{Op: "inspect", Path: name, Err: err}
	}
	// A read-only transaction is safe to send again, which etcd's client
	// does not do for a Txn: a leader change or a member restart under
	// way is retried here, until ctx ends.
	resp, err := retried(ctx, inspectAttempt, func(ctx context.Context) (*clientv3.TxnResponse, error) {
		return c.Txn(ctx).Then(
			clientv3.OpGet(name+"/", clientv3.WithPrefix(), clientv3.WithSort(clientv3.SortByCreateRevision, clientv3.SortAscend)),
			clientv3.OpGet(name+HandoffSuffix),
		).Commit()
	})
	if err != nil {
		return st, &proclock.Error{Op: "inspect", Path: name, Err: err}
	}
	st.Revision = resp.Header.Revision
	kvs := resp.Responses[0].GetResponseRange().GetKvs()
	rec := firstHandoff(resp.Responses[1])
	if len(kvs) == 0 {
		st.Unclean = rec != nil && !rec.Released
		if st.Unclean {
			st.Reason = "its last holder did not let go cleanly: the next holder serves the lock-delay"
		}
		return st, nil
	}
	h := kvs[0]
	st.State = proclock.StateHeld
	st.Key, st.Fence, st.Lease, st.Waiters = string(h.Key), h.CreateRevision, h.Lease, len(kvs)-1
	st.HeldHere = held.has(st.Key)
	e := heldBy(name, h, rec)
	st.Holder, st.Reason = e.Holder, e.Reason
	if !e.Since.IsZero() {
		st.AcquiredAt = e.Since
		st.HeldFor = max(time.Since(e.Since), 0)
	}
	if rec != nil && rec.Key == st.Key && rec.Delaying {
		st.LockDelay, st.LockDelayUntil = true, rec.DelayUntil
		if st.Reason == "" {
			st.Reason = "serving the lock-delay after an unclean handoff"
		}
	}
	if err := readTTL(ctx, c, &st); err != nil {
		return st, &proclock.Error{Op: "inspect", Path: name, Err: err}
	}
	return st, nil
}

// readTTL sets st's TTL and TTL left as the server has them for st's
// lease, if any; a lease gone meanwhile leaves them zero, no error.
func readTTL(ctx context.Context, c *clientv3.Client, st *Status) error {
	if st.Lease == 0 {
		return nil
	}
	ttl, err := retried(ctx, inspectAttempt, func(ctx context.Context) (*clientv3.LeaseTimeToLiveResponse, error) {
		return c.TimeToLive(ctx, clientv3.LeaseID(st.Lease))
	})
	switch {
	case err == nil && ttl.TTL >= 0: // -1: gone; 0: under a second left
		st.TTL, st.TTLLeft = time.Duration(ttl.GrantedTTL)*time.Second, time.Duration(ttl.TTL)*time.Second
	case err != nil && !isLeaseNotFound(err):
		return err
	}
	return nil
}

// inspectAttempt bounds each attempt of Inspect's reads.
const inspectAttempt = 2 * time.Second

func checkArgs(ctx context.Context, c *clientv3.Client, name string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if c == nil {
		return errors.New("no etcd client")
	}
	if name == "" {
		return fmt.Errorf("empty lock name")
	}
	return nil
}
