package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
)

// keeper keeps one acquisition's lease alive and tells when it is lost:
// its keepalives are sent one at a time (KeepAliveOnce), so that each
// renewal has a known send time for the local deadline; a timer fires at
// the deadline; and a watch on the acquisition's key sees it deleted or
// replaced as soon as etcd does.
type keeper struct {
	c     *clientv3.Client
	name  string
	lease clientv3.LeaseID
	ttl   time.Duration // as granted

	ctx  context.Context
	stop context.CancelFunc
	wg   sync.WaitGroup

	mu      sync.Mutex
	v       validity
	moved   chan struct{} // the deadline moved; cap 1
	lost    chan struct{}
	err     error // the *proclock.LostError, once lost
	quiet   bool  // releasing: a loss now waits for the release's outcome
	pending error // a loss seen while quiet
}

// startKeeper starts keeping lease alive; sent is when its grant was sent,
// which gives the first deadline.
func startKeeper(c *clientv3.Client, name string, lease clientv3.LeaseID, granted, margin time.Duration, sent time.Time) *keeper {
	ctx, stop := context.WithCancel(context.Background())
	k := &keeper{c: c, name: name, lease: lease, ttl: granted, ctx: ctx, stop: stop,
		moved: make(chan struct{}, 1), lost: make(chan struct{})}
	k.v = validity{margin: margin}
	k.v.renewed(sent, granted)
	k.wg.Add(2)
	go k.renew()
	go k.expire()
	return k
}

// interval is how long after a sent keepalive the next one goes: a third
// of the TTL, as etcd's own client does, so that two may fail before the
// deadline.
func (k *keeper) interval() time.Duration { return k.ttl / 3 }

// retry is the pause after a keepalive that failed.
func (k *keeper) retry() time.Duration { return min(k.ttl/20, 50*time.Millisecond) }

// hang is how long a keepalive goes unanswered before another is sent
// beside it. A member that hangs (cut off, stopped, swamped) must not hold
// up the renewal until the deadline: etcd's client sends each request to
// the next member in turn (gRPC's round robin), so the next keepalive goes
// to another member while the first is still waited for.
func (k *keeper) hang() time.Duration { return max(k.ttl/10, 50*time.Millisecond) }

// ack is the outcome of one keepalive, sent at sent.
type ack struct {
	sent time.Time
	ttl  time.Duration
	err  error
}

func (k *keeper) renew() {
	defer k.wg.Done()
	acks := make(chan ack)
	next := time.Now().Add(k.interval())
	for k.sleepUntil(next) {
		sent, ok := k.renewOnce(acks)
		if !ok {
			return
		}
		next = sent.Add(k.interval())
	}
}

// renewOnce sends keepalives until one sent from now on is acknowledged,
// and returns when that one was sent; ok is false when the keeper stopped
// or the lock was lost. A keepalive unanswered for hang, or failed, is
// followed by another without waiting for its end; each runs to the
// local deadline at most, past which an answer would come too late.
func (k *keeper) renewOnce(acks chan ack) (sent time.Time, ok bool) {
	began := time.Now()
	again := time.NewTimer(0)
	defer again.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return time.Time{}, false
		case <-k.lost:
			return time.Time{}, false
		case <-again.C:
			k.send(acks)
			again.Reset(k.hang())
		case a := <-acks:
			switch {
			case a.err == nil:
				// A late answer of an earlier round counts too.
				k.renewed(a.sent, a.ttl)
				if !a.sent.Before(began) {
					return a.sent, true
				}
			case errors.Is(a.err, rpctypes.ErrLeaseNotFound):
				k.lose(fmt.Errorf("%w: lease %x: %w", ErrLeaseGone, int64(k.lease), a.err))
				return time.Time{}, false
			case !a.sent.Before(began):
				again.Reset(k.retry())
			}
		}
	}
}

// send sends one keepalive, its outcome to acks.
func (k *keeper) send(acks chan<- ack) {
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		a := ack{sent: time.Now()}
		attempt, cancel := context.WithDeadline(k.ctx, k.deadline())
		resp, err := k.c.KeepAliveOnce(attempt, k.lease)
		cancel()
		if a.err = err; err == nil {
			a.ttl = time.Duration(resp.TTL) * time.Second
		}
		select {
		case acks <- a:
		case <-k.ctx.Done():
		case <-k.lost:
		}
	}()
}

// sleepUntil waits until t, and reports false when the keeper stopped or
// the lock was lost first.
func (k *keeper) sleepUntil(t time.Time) bool {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-timer.C:
		return true
	case <-k.ctx.Done():
		return false
	case <-k.lost:
		return false
	}
}

// expire fires at the deadline, and declares the lock lost unless a
// renewal moved the deadline in the meantime.
func (k *keeper) expire() {
	defer k.wg.Done()
	timer := time.NewTimer(time.Until(k.deadline()))
	defer timer.Stop()
	for {
		select {
		case <-k.ctx.Done():
			return
		case <-k.lost:
			return
		case <-k.moved:
			timer.Reset(time.Until(k.deadline()))
		case <-timer.C:
			k.mu.Lock()
			passed := k.v.passed(time.Now())
			at := k.v.deadline
			k.mu.Unlock()
			if passed {
				k.lose(fmt.Errorf("%w (lease %x, TTL %v)", ErrDeadline, int64(k.lease), k.ttl))
				return
			}
			timer.Reset(time.Until(at))
		}
	}
}

// watchKey watches the acquisition's key, created at revision created,
// from revision from on: any change to it but our own release is a loss.
// A watch that ends (compacted, cut) is started again after a read that
// checks the key is still ours.
func (k *keeper) watchKey(key string, created, from int64) {
	k.wg.Add(1)
	go func() {
		defer k.wg.Done()
		for {
			ctx, cancel := context.WithCancel(clientv3.WithRequireLeader(k.ctx))
			wch := k.c.Watch(ctx, key, clientv3.WithRev(from))
			from = k.follow(wch)
			cancel()
			if from == 0 {
				return
			}
			// Read again: the key may have changed while no watch ran.
			resp, err := k.c.Get(k.ctx, key)
			for err != nil {
				if k.ctx.Err() != nil || k.isLost() {
					return
				}
				if !k.sleepUntil(time.Now().Add(k.retry())) {
					return
				}
				resp, err = k.c.Get(k.ctx, key)
			}
			if len(resp.Kvs) == 0 || resp.Kvs[0].CreateRevision != created || resp.Kvs[0].ModRevision != created {
				k.keyGone()
				return
			}
			from = resp.Header.Revision + 1
		}
	}()
}

// follow reads a watch until it sees the key change (then 0) or ends
// (then the revision to watch from next; 0 when the keeper stopped).
func (k *keeper) follow(wch clientv3.WatchChan) int64 {
	var last int64
	for {
		select {
		case <-k.ctx.Done():
			return 0
		case <-k.lost:
			return 0
		case wr, ok := <-wch:
			if !ok || wr.Canceled || wr.Err() != nil {
				if k.ctx.Err() != nil {
					return 0
				}
				return max(last, 1)
			}
			if len(wr.Events) > 0 {
				k.keyGone()
				return 0
			}
			last = wr.Header.Revision + 1
		}
	}
}

// keyGone declares the loss of a key that was deleted or replaced.
func (k *keeper) keyGone() {
	k.lose(fmt.Errorf("%w (lease %x)", ErrKeyGone, int64(k.lease)))
}

func (k *keeper) renewed(sent time.Time, granted time.Duration) {
	k.mu.Lock()
	before := k.v.deadline
	k.v.renewed(sent, granted)
	after := k.v.deadline
	k.mu.Unlock()
	if after != before {
		select {
		case k.moved <- struct{}{}:
		default:
		}
	}
}

// lose records the loss, once. While a release is under way a loss only
// waits: the release's compare-and-delete tells whether the lock was
// still held (then there was none) or not (then promote declares it).
func (k *keeper) lose(cause error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil || k.ctx.Err() != nil {
		return
	}
	if k.quiet {
		if k.pending == nil {
			k.pending = cause
		}
		return
	}
	k.err = &proclock.LostError{Path: k.name, Err: cause}
	close(k.lost)
}

// promote declares a loss seen during a release that found the lock no
// longer held; cause is what the release found, for want of a loss seen.
func (k *keeper) promote(cause error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.err != nil {
		return
	}
	if k.pending != nil {
		cause = k.pending
	}
	k.err = &proclock.LostError{Path: k.name, Err: cause}
	close(k.lost)
}

func (k *keeper) isLost() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err != nil
}

// cause is the loss, or nil.
func (k *keeper) cause() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.err
}

func (k *keeper) deadline() time.Time {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.v.deadline
}

// hush holds back losses while a release is under way (see lose).
func (k *keeper) hush() {
	k.mu.Lock()
	k.quiet = true
	k.mu.Unlock()
}

// close stops renewing and watching, and waits for it to end; no loss is
// declared after it returns.
func (k *keeper) close() {
	k.mu.Lock()
	k.stop()
	k.mu.Unlock()
	k.wg.Wait()
}
