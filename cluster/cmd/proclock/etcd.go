package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/cluster"
	"github.com/proclock/proclock/internal/cli"
)

// scheme starts the name of a cluster lock on the command line.
const scheme = "etcd://"

// defaultEndpoint is etcdctl's: where a name without endpoints and an
// environment without ETCDCTL_ENDPOINTS look.
const defaultEndpoint = "127.0.0.1:2379"

// defaultConnectTimeout bounds reaching etcd: a server that is not there
// is an error (exit 123) in this long, never a hang.
const defaultConnectTimeout = 5 * time.Second

// etcdBackend is cli.Backend for locks in etcd: etcd://ENDPOINTS/NAME.
type etcdBackend struct {
	ttl            time.Duration
	lockDelay      time.Duration // < 0: not given (the TTL)
	connectTimeout time.Duration
}

func newEtcdBackend() *etcdBackend {
	return &etcdBackend{ttl: cluster.DefaultTTL, lockDelay: -1, connectTimeout: defaultConnectTimeout}
}

func (b *etcdBackend) Claims(name string) bool { return strings.HasPrefix(name, scheme) }

func (b *etcdBackend) Flags() []cli.Flag {
	return []cli.Flag{
		{Names: []string{"--ttl"}, Value: "SECONDS or a duration", Set: func(s string) error {
			d, err := parseSeconds(s)
			if err == nil && d < time.Second {
				err = errors.New("a lease lives a second at least")
			}
			b.ttl = d
			return err
		}},
		{Names: []string{"--lock-delay"}, Value: "SECONDS or a duration", Set: func(s string) error {
			d, err := parseSeconds(s)
			b.lockDelay = d
			return err
		}},
		{Names: []string{"--connect-timeout"}, Value: "SECONDS or a duration", Set: func(s string) error {
			d, err := parseSeconds(s)
			if err == nil && d <= 0 {
				err = errors.New("not a positive duration")
			}
			b.connectTimeout = d
			return err
		}},
	}
}

// parseSeconds reads seconds (10, 0.5) or a Go duration (10s, 500ms).
func parseSeconds(s string) (time.Duration, error) {
	if f, err := strconv.ParseFloat(s, 64); err == nil && !strings.ContainsAny(s, "eEinfxX") {
		if f < 0 || f > 1e9 {
			return 0, errors.New("out of range")
		}
		return time.Duration(f * float64(time.Second)), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return 0, errors.New("not seconds or a duration (try 10, 0.5, 500ms)")
	}
	return d, nil
}

func (b *etcdBackend) Usage() string { return etcdUsage }

const etcdUsage = `Cluster locks (etcd v3): NAME is etcd://ENDPOINTS/NAME
  etcd://127.0.0.1:2379/jobs/backup     the lock jobs/backup on that member
  etcd://h1:2379,h2:2379,h3:2379/jobs/backup
  etcd:///jobs/backup                   endpoints from $ETCDCTL_ENDPOINTS,
                                        else 127.0.0.1:2379 (etcdctl's)
NAME is what etcdctl lock takes: "proclock run etcd:///jobs/backup" and
"etcdctl lock jobs/backup" exclude each other. A file whose name starts
with etcd:// is written ./etcd://...
  --ttl T              the lease's TTL (default 10s, etcdctl lock's): a
                       holder that dies keeps the lock this long
  --lock-delay T       how long a new holder waits before COMMAND starts
                       when its predecessor did not let go cleanly
                       (default the TTL; 0 for none)
  --connect-timeout T  how long to try to reach etcd (default 5s; then
                       exit 123)
COMMAND gets PROCLOCK_FENCE (the fencing token: the key's create
revision, rising from holder to holder), PROCLOCK_KEY (NAME/<lease>),
PROCLOCK_LEASE (hex), and ETCD_LOCK_KEY and ETCD_LOCK_REV as etcdctl lock
names them (REV is the fence here), set over inherited ones. --grace must
fit in the TTL: 3 x (grace + margin) <= TTL, the margin a tenth of the
TTL (100ms at least). docs/cluster.md, "The command".
`

func (b *etcdBackend) Open(ctx context.Context, operand string) (cli.Target, error) {
	endpoints, name, err := parseName(operand, os.Getenv("ETCDCTL_ENDPOINTS"))
	if err != nil {
		return nil, err
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          b.connectTimeout,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(), // its retries are not the user's news
		DialOptions:          []grpc.DialOption{reconnect(b.ttl)},
	})
	if err != nil {
		return nil, fmt.Errorf("proclock: %s: %w", operand, err)
	}
	t := &etcdTarget{b: b, c: c, operand: operand, name: name, endpoints: endpoints}
	if err := t.probe(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return t, nil
}

// parseName reads etcd://ENDPOINTS/NAME: the endpoints, comma-separated
// (env's when none are given, else etcdctl's default), and the name.
func parseName(operand, env string) (endpoints []string, name string, err error) {
	rest := strings.TrimPrefix(operand, scheme)
	hosts, name, ok := strings.Cut(rest, "/")
	switch {
	case !ok || name == "":
		return nil, "", fmt.Errorf("proclock: %s: no lock name: write etcd://HOST:PORT/NAME (or etcd:///NAME)", operand)
	case strings.Contains(hosts, "@"):
		return nil, "", fmt.Errorf("proclock: %s: user names and passwords are not supported in the name", operand)
	}
	if hosts == "" {
		hosts = env
	}
	for _, h := range strings.Split(hosts, ",") {
		if h = strings.TrimSpace(h); h != "" {
			endpoints = append(endpoints, h)
		}
	}
	if len(endpoints) == 0 {
		endpoints = []string{defaultEndpoint}
	}
	return endpoints, name, nil
}

// etcdTarget is one cluster lock opened for a run or a status.
type etcdTarget struct {
	b         *etcdBackend
	c         *clientv3.Client
	operand   string
	name      string
	endpoints []string
}

// unreachable is the error for etcd not answering within the connect
// timeout.
func (t *etcdTarget) unreachable(err error) error {
	return fmt.Errorf("proclock: etcd at %s: %w within %v: %w", strings.Join(t.endpoints, ","), cli.ErrUnreachable, t.b.connectTimeout, err)
}

// probe reads the lock's prefix (a linearizable read: it needs a member
// with a quorum) within the connect timeout.
func (t *etcdTarget) probe(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, t.b.connectTimeout)
	defer cancel()
	if _, err := t.c.Get(ctx, t.name+"/", clientv3.WithPrefix(), clientv3.WithCountOnly()); err != nil {
		return t.unreachable(err)
	}
	return nil
}

// reconnect is the client's connect backoff for a lease of ttl: gRPC's
// default waits 1 s (then 1.6 times longer each time) after a failed
// connection, which a short TTL cannot afford after an etcd member's
// restart; here the waits stay under a tenth of the TTL
// (docs/cluster.md, "Limits").
func reconnect(ttl time.Duration) grpc.DialOption {
	return grpc.WithConnectParams(grpc.ConnectParams{
		Backoff:           backoff.Config{BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: min(max(ttl/10, 100*time.Millisecond), time.Second)},
		MinConnectTimeout: 2 * time.Second,
	})
}

// margin is the library's default margin for ttl (cluster.Options).
func margin(ttl time.Duration) time.Duration { return max(ttl/10, 100*time.Millisecond) }

func (t *etcdTarget) Grace(asked time.Duration) (time.Duration, error) {
	ttl := t.b.ttl.Round(time.Second)
	if ttl < t.b.ttl {
		ttl += time.Second // the library rounds up to whole seconds
	}
	if asked == 0 {
		return ttl / 5, nil
	}
	if m := margin(ttl); 3*(asked+m) > ttl {
		return 0, fmt.Errorf("--grace %v is too long for --ttl %v: the grace and the margin (%v) must fit three times in the TTL, so that a missed renewal leaves time for both; lower --grace to %v or raise --ttl",
			asked, ttl, m, ttl/3-m)
	}
	return asked, nil
}

func (t *etcdTarget) options(wait bool) cluster.Options {
	o := cluster.Options{Wait: wait, TTL: t.b.ttl}
	switch {
	case t.b.lockDelay == 0:
		o.LockDelay = -1 // none
	case t.b.lockDelay > 0:
		o.LockDelay = t.b.lockDelay
	}
	return o
}

func (t *etcdTarget) Acquire(ctx context.Context, wait bool) (cli.Held, error) {
	o := t.options(wait)
	if tell := cli.Notice(ctx); tell != nil {
		o.OnLockDelay = func(d time.Duration) {
			tell(fmt.Sprintf("the last holder did not let go cleanly: serving a lock-delay of %v, until %s, before COMMAND starts",
				d, time.Now().Add(d).Format("15:04:05.000")))
		}
	}
	l, err := cluster.Acquire(ctx, t.c, t.name, o)
	if err != nil {
		return nil, t.acquireError(err)
	}
	return &etcdHeld{l: l}, nil
}

// acquireError is the command's error for Acquire's err: a held lock as
// it is, and a server too slow for the lease (exit 123) as unreachable.
func (t *etcdTarget) acquireError(err error) error {
	switch {
	case errors.Is(err, proclock.ErrHeld), errors.Is(err, proclock.ErrLost):
		// Held; or the waiter's own lease died while it waited (revoked,
		// its key deleted, not renewed in time): run exits 125 for it.
		return err
	case errors.Is(err, cluster.ErrDeadline), errors.Is(err, context.DeadlineExceeded):
		// The server did not answer before -w's time ran out.
		return t.unreachable(err)
	case errors.Is(err, cluster.ErrLeaseGone):
		// The lease expired on the server before its key was written
		// (each of the leases Acquire tried): the server or this host
		// is too loaded for the TTL. Not a usage
		// error: the same line may work a moment later.
		return fmt.Errorf("proclock: etcd at %s: %w in time for the lease (TTL %v): %w",
			strings.Join(t.endpoints, ","), cli.ErrUnreachable, t.b.ttl, err)
	}
	return err
}

func (t *etcdTarget) Inspect(ctx context.Context) (cli.Report, error) {
	ctx, cancel := context.WithTimeout(ctx, t.b.connectTimeout)
	defer cancel()
	st, err := cluster.Inspect(ctx, t.c, t.name)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			return cli.Report{}, t.unreachable(err)
		}
		return cli.Report{}, err
	}
	rep := cli.Report{Status: st.Status, Cluster: &cli.ClusterStatus{
		Endpoints: t.endpoints, Name: t.name, Key: st.Key, Fence: st.Fence, Lease: st.Lease,
		TTL: st.TTL, TTLLeft: st.TTLLeft, Waiters: st.Waiters,
		LockDelay: st.LockDelay, LockDelayUntil: st.LockDelayUntil, Unclean: st.Unclean, Revision: st.Revision,
	}}
	rep.Path = t.operand
	return rep, nil
}

func (t *etcdTarget) Close() error { return t.c.Close() }

// etcdHeld is a held cluster lock as run sees it.
type etcdHeld struct{ l *cluster.Lock }

func (h *etcdHeld) Release() error        { return h.l.Release() }
func (h *etcdHeld) Lost() <-chan struct{} { return h.l.Lost() }
func (h *etcdHeld) Err() error            { return h.l.Err() }
func (h *etcdHeld) Deadline() time.Time   { return h.l.Deadline() }
func (h *etcdHeld) leaseHex() string      { return strconv.FormatInt(int64(h.l.Lease()), 16) }
func (h *etcdHeld) fence() string         { return strconv.FormatInt(h.l.Fence(), 10) }
func (h *etcdHeld) lockDelay() string     { return h.l.LockDelay().Round(time.Millisecond).String() }
func (h *etcdHeld) ttl() string           { return h.l.TTL().String() }
func (h *etcdHeld) describeDelay() string {
	if h.l.LockDelay() == 0 {
		return ""
	}
	return ", after a lock-delay of " + h.lockDelay() + " (the last holder did not let go cleanly)"
}

func (h *etcdHeld) Env() []string {
	return []string{
		"PROCLOCK_FENCE=" + h.fence(),
		"PROCLOCK_KEY=" + h.l.Key(),
		"PROCLOCK_LEASE=" + h.leaseHex(),
		"ETCD_LOCK_KEY=" + h.l.Key(),
		"ETCD_LOCK_REV=" + h.fence(),
	}
}

func (h *etcdHeld) Describe() string {
	return fmt.Sprintf("fence %s, key %s, lease %s, TTL %s%s", h.fence(), h.l.Key(), h.leaseHex(), h.ttl(), h.describeDelay())
}
