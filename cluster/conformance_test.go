package cluster

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
	"github.com/proclock/proclock/platform"
)

// The conformance suite's behaviour cases (exclusion, the holder named,
// waiting and its cancellation, turns in one process, a crashed holder's
// lock taken again), the same cases the host locks pass, against locks on
// etcd held by real processes.
func TestConformance(t *testing.T) {
	tc := startCluster(t, 1)
	conformance.RunBehaviour(t, &etcdBackend{tc: tc, obs: tc.client(t)})
}

// etcdBackend is the conformance suite's Backend for cluster locks: TTL 1 s
// (the server's minimum here), so that a killed holder's lock is free a
// second later, and a short lock-delay after it.
type etcdBackend struct {
	tc  *testCluster
	obs *clientv3.Client
	n   int
}

func (b *etcdBackend) Mechanism() proclock.Mechanism { return MechanismEtcd }

func (b *etcdBackend) NewRoom(t *testing.T) conformance.Room {
	b.n++
	return &etcdRoom{b: b, dir: fmt.Sprintf("/conformance/%d-%s", b.n, strings.ReplaceAll(t.Name(), "/", "-"))}
}

type etcdRoom struct {
	b   *etcdBackend
	dir string
}

func (r *etcdRoom) Dir() string { return r.dir }

func (r *etcdRoom) Spawn(t *testing.T) conformance.Peer {
	p := spawnPeer(t, peerConfig{endpoints: r.b.tc.endpoints(), ttl: time.Second, lockDelay: 50 * time.Millisecond})
	return &etcdPeer{p: p, obs: r.b.obs}
}

// etcdPeer is a peer process as the suite's Peer.
type etcdPeer struct {
	p   *peer
	obs *clientv3.Client
}

func (e *etcdPeer) Identity() platform.Identity { return e.p.id }

func (e *etcdPeer) Acquire(ctx context.Context, name string, opts proclock.Options) error {
	_, err := e.p.acquire(ctx, name, opts.Wait)
	return err
}

func (e *etcdPeer) Release(name string) error { return e.p.release(name) }

func (e *etcdPeer) IsHeld(ctx context.Context, name string) (bool, error) {
	r := e.p.call(ctx, peerRequest{Op: "isheld", Name: name})
	return r.Held, r.Err.toError(name)
}

func (e *etcdPeer) Inspect(ctx context.Context, name string) (proclock.Status, error) {
	r := e.p.call(ctx, peerRequest{Op: "inspect", Name: name})
	if r.Status == nil {
		return proclock.Status{Path: name}, r.Err.toError(name)
	}
	return r.Status.Status, r.Err.toError(name)
}

// Kill ends the process with SIGKILL, and returns once the keys it held
// are gone: its leases ran out on the server.
func (e *etcdPeer) Kill() {
	e.p.mu.Lock()
	var keys []string
	for _, k := range e.p.keys {
		keys = append(keys, k.key)
	}
	e.p.mu.Unlock()
	e.p.kill()
	for _, key := range keys {
		waitGone(e.p.t, e.obs, key)
	}
}

// FailIdentity: a peer's identity comes from the OS, which cannot be made
// to refuse it here.
func (e *etcdPeer) FailIdentity() bool { return false }

// waitGone waits until key is deleted.
func waitGone(t testing.TB, c *clientv3.Client, key string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := c.Get(ctx, key)
	if err != nil {
		t.Fatalf("reading %s: %v", key, err)
	}
	if len(resp.Kvs) == 0 {
		return
	}
	for wr := range c.Watch(ctx, key, clientv3.WithRev(resp.Header.Revision+1), clientv3.WithFilterPut()) {
		if len(wr.Events) > 0 {
			return
		}
		if wr.Err() != nil {
			t.Fatalf("watching %s: %v", key, wr.Err())
		}
	}
	t.Fatalf("%s not deleted within 30 s", key)
}
