// Package cluster is proclock's lock for one running instance per cluster:
// a lock held in etcd (v3), with the root package's shape (Acquire with
// Options.Wait and a context, IsHeld, Inspect, Lock.Release) and errors
// (*proclock.HeldError for a taken lock, *proclock.LostError once a held
// lock is lost). It is a module of its own, so that programs that lock
// only on one host never download etcd.
//
// A lock is a name. Its holder and waiters are keys NAME/<lease in hex>,
// one lease per acquisition, and the key with the oldest create revision
// holds: the layout of etcdctl lock and client/v3/concurrency, so that
// both tools and this package exclude each other. The key's value records
// who queued it (host, pid, process start, when), written in the
// transaction that creates the key; etcdctl's keys have an empty value and
// are named as such.
//
// What the package promises beyond etcd's own Mutex (docs/cluster.md):
//
//   - A held lock knows when it is lost, before the server can give it to
//     anyone else: a local deadline from the moment each keepalive was
//     sent and the TTL the server granted, less a margin, checked on its
//     own timer (Lock.Lost, Lock.Err, Lock.Deadline); and a watch on its
//     own key, so that a revoked lease or a deleted key is seen at once.
//   - A fencing token (Lock.Fence), the holding key's create revision,
//     rising strictly from holder to holder, and Lock.Guard, the comparison
//     that makes an etcd transaction fail once the lock has passed on.
//   - Release is a compare-and-delete on the create revision, then a
//     revoke: a retried or late release never deletes a newer holder's key.
//   - A wait can be cancelled and leaves no key behind; an acquisition
//     whose outcome is unknown revokes its whole lease.
//   - Lock-delay: a clean release leaves a record saying so (at NAME +
//     HandoffSuffix, outside etcdctl's prefix); a new holder that finds
//     none for its predecessor waits Options.LockDelay before Acquire
//     returns, for a holder that was paused or cut off and may still act.
//
// What no lock can do: stop a holder that was paused (a stopped process,
// a frozen VM) from acting when it resumes. It learns of the loss at once
// then (Lost); a resource that must not take its stale writes checks the
// fencing token.
package cluster
