package cluster

import "errors"

// Causes of a loss, wrapped by the *proclock.LostError of Lock.Err (and by
// the error of an Acquire whose lease died while it waited).
var (
	// ErrDeadline: no keepalive was acknowledged in time. The local
	// deadline passed; the server may expire the lease at any moment
	// after it (it has not yet, when the margin holds).
	ErrDeadline = errors.New("lease not renewed before its local deadline")
	// ErrLeaseGone: the server says the lease is gone (revoked, or
	// expired); also the error of an Acquire whose every lease expired
	// before its key could be written with it.
	ErrLeaseGone = errors.New("lease revoked or expired on the server")
	// ErrKeyGone: the lock's key was deleted or replaced by someone else
	// (etcdctl del, a put), or never became the holder.
	ErrKeyGone = errors.New("lock's key deleted or replaced")
)
