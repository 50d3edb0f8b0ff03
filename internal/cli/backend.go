package cli

import (
	"context"
	"errors"
	"time"

	"github.com/proclock/proclock"
)

// The command line serves more than the host's locks: a program passes
// Main the backends it links in (cluster/cmd/proclock passes etcd's), and
// a lock name that one of them claims (etcd://HOST:2379/NAME) is taken
// through it, with the same options, signals and exit codes. A name no
// backend claims is a PATH on this host, a Target of the root package's
// (hostTarget): run and status have one path for both. This package
// imports no backend: etcd stays out of the root module (docs/command.md,
// "Backends").

// A Backend is a kind of lock besides the host's that proclock run and
// proclock status can take and inspect.
type Backend interface {
	// Claims reports whether the operand name (PATH's place on the
	// command line) names a lock of this backend, by its form alone
	// (a scheme such as "etcd://"); a file of such a name is then
	// written ./NAME.
	Claims(name string) bool
	// Flags are the backend's own options of run and status; their
	// set functions keep the values for Open.
	Flags() []Flag
	// Usage is the backend's part of the help of run and status: its
	// names, its options and what it adds.
	Usage() string
	// Open prepares the lock name for one run or status, with the
	// options Flags set; it may connect, and must not hang: ctx is
	// bounded.
	Open(ctx context.Context, name string) (Target, error)
}

// A Flag is one option a Backend adds to run and status.
type Flag struct {
	Names []string // every spelling: "--ttl"
	Value string   // the value's name in messages; "" for a switch
	Set   func(value string) error
}

// A Target is one lock of a Backend, opened for a run or a status.
type Target interface {
	// Acquire takes the lock, waiting for its holder when wait is set,
	// until ctx ends. A held lock is a *proclock.HeldError (errors.Is
	// proclock.ErrHeld), also at the end of a wait that ran out (then
	// with ctx's error too); an unreachable server matches
	// ErrUnreachable.
	Acquire(ctx context.Context, wait bool) (Held, error)
	// Inspect reports on the lock without taking it.
	Inspect(ctx context.Context) (Report, error)
	// Grace is the grace that run gives COMMAND between SIGTERM and
	// SIGKILL when the lock is lost, for the grace asked on the
	// command line (0: the backend's default); an error refuses a grace
	// the lock cannot afford (its TTL is too short for it).
	Grace(asked time.Duration) (time.Duration, error)
	// Close lets go of what Open took (a connection).
	Close() error
}

// A Held is a lock a Target holds.
type Held interface {
	// Release lets go of the lock.
	Release() error
	// Lost is closed once the lock is known to be lost; Err says why
	// (a *proclock.LostError).
	Lost() <-chan struct{}
	Err() error
	// Deadline is when the lock is lost unless it is renewed first:
	// the local deadline of a lease, which moves on with each renewal
	// and never back. The zero time means the lock has none (it is lost
	// only by an event).
	Deadline() time.Time
	// Env is what COMMAND gets in its environment, NAME=VALUE, set
	// after the inherited variables so that nested locks show the
	// innermost.
	Env() []string
	// Describe is one line for people about the lock as taken (its
	// fence, lease, TTL, a lock-delay served), for -v.
	Describe() string
}

// Report is a Target's status: the root package's, and a cluster lock's
// own facts when it has them.
type Report struct {
	proclock.Status
	Cluster *ClusterStatus
}

// ClusterStatus is what a lock held in a cluster (etcd) adds to a
// status.
type ClusterStatus struct {
	Endpoints []string
	Name      string // the lock's name in the cluster
	Key       string // the holder's key
	Fence     int64  // the holder's fencing token
	Lease     int64  // the holder's lease
	// TTL is the holder's lease TTL as granted, TTLLeft what the
	// server says is left; zero when unknown.
	TTL, TTLLeft time.Duration
	Waiters      int
	// LockDelay: the holder serves the lock-delay after an unclean
	// handoff, until LockDelayUntil (by the holder's clock).
	LockDelay      bool
	LockDelayUntil time.Time
	// Unclean: free, but its last holder did not let go cleanly; the
	// next holder serves the lock-delay.
	Unclean bool
	// Revision is the revision the report was read at.
	Revision int64
	// NotRenewing: the holder lets its lease run down (status sets it).
	NotRenewing bool
}

// noticeKey is the context key of Notice's function.
type noticeKey struct{}

// Notice is where a Target's Acquire tells -v what it waits for that its
// caller cannot see (a lock-delay that starts, and how long); nil without
// -v.
func Notice(ctx context.Context) func(string) {
	f, _ := ctx.Value(noticeKey{}).(func(string))
	return f
}

// ErrUnreachable is matched (errors.Is) by a Backend's errors when its
// server cannot be reached in the time allowed: run and status exit with
// their own code for it.
var ErrUnreachable = errors.New("server unreachable")

// claimant is the backend of backends that claims name, or nil: the
// first that does.
func claimant(backends []Backend, name string) Backend {
	for _, b := range backends {
		if b.Claims(name) {
			return b
		}
	}
	return nil
}

// givenOption is o, noted in given (by its first name) when given: an
// option that only one kind of lock has, which runExtra.refuse refuses on
// the others.
func givenOption(given *[]string, o option) option {
	set, name := o.set, o.names[0]
	o.set = func(v string) error {
		*given = append(*given, name)
		return set(v)
	}
	return o
}
