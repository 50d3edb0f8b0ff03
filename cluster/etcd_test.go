package cluster

import (
	"context"
	"fmt"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// testCluster is embedded etcd members in this process, with short ticks
// (10 ms, election 100 ms: the server's minimum TTL is then 1 s).
type testCluster struct {
	t       testing.TB
	members []*member
}

type member struct {
	name   string
	dir    string
	client string // client URL
	peer   string // peer URL
	e      *embed.Etcd
	all    string // the initial cluster
}

// freeURL is a URL on a free loopback port.
func freeURL(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return "http://" + ln.Addr().String()
}

// startCluster starts n members and waits until they have a leader.
func startCluster(t testing.TB, n int) *testCluster {
	t.Helper()
	tc := &testCluster{t: t}
	var initial []string
	for i := range n {
		m := &member{name: fmt.Sprintf("m%d", i), dir: t.TempDir(), client: freeURL(t), peer: freeURL(t)}
		tc.members = append(tc.members, m)
		initial = append(initial, m.name+"="+m.peer)
	}
	errs := make(chan error, n)
	for _, m := range tc.members {
		m.all = strings.Join(initial, ",")
		go func() { errs <- m.start(true) }()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Fatalf("starting etcd: %v", err)
		}
	}
	t.Cleanup(tc.close)
	return tc
}

func (m *member) config(fresh bool) *embed.Config {
	cfg := embed.NewConfig()
	cfg.Name = m.name
	cfg.Dir = m.dir
	cfg.TickMs, cfg.ElectionMs = 10, 100
	cu, _ := url.Parse(m.client)
	pu, _ := url.Parse(m.peer)
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{*cu}, []url.URL{*cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{*pu}, []url.URL{*pu}
	cfg.InitialCluster = m.all
	cfg.InitialClusterToken = "proclock-test"
	if !fresh {
		cfg.ClusterState = embed.ClusterStateFlagExisting
	}
	cfg.LogLevel = "error"
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	return cfg
}

func (m *member) start(fresh bool) error {
	e, err := embed.StartEtcd(m.config(fresh))
	if err != nil {
		return err
	}
	select {
	case <-e.Server.ReadyNotify():
	case <-time.After(30 * time.Second):
		e.Close()
		return fmt.Errorf("member %s not ready after 30 s", m.name)
	}
	m.e = e
	return nil
}

// stop closes the member (its data dir stays). Close waits for open
// client streams; clients through proxies are cut first by the callers
// that care.
func (m *member) stop() {
	if m.e != nil {
		m.e.Close()
		m.e = nil
	}
}

// restart starts a stopped member again on its data dir.
func (m *member) restart(t testing.TB) {
	t.Helper()
	if err := m.start(false); err != nil {
		t.Fatalf("restarting %s: %v", m.name, err)
	}
}

func (tc *testCluster) close() {
	for _, m := range tc.members {
		m.stop()
	}
}

// endpoints is every member's client address (host:port).
func (tc *testCluster) endpoints() []string {
	var eps []string
	for _, m := range tc.members {
		eps = append(eps, strings.TrimPrefix(m.client, "http://"))
	}
	return eps
}

// leader is the index of the member that leads, or -1.
func (tc *testCluster) leader() int {
	for i, m := range tc.members {
		if m.e != nil && m.e.Server.Leader() == m.e.Server.MemberID() {
			return i
		}
	}
	return -1
}

// fastReconnect is the connect backoff of the tests' clients. gRPC's
// default waits 1 s (±20%) after a failed connection before the next try:
// a member restarted in 30-340 ms was reached again only 0.8-1.1 s after
// the cut, which at TTL 2 s left the holder's deadline 38-410 ms to spare
// (measured, PROCLOCK_SEED runs of TestMemberRestartShort), and none under
// load: the lock was lost, correctly, to the client's backoff.
var fastReconnect = grpc.WithConnectParams(grpc.ConnectParams{
	Backoff:           backoff.Config{BaseDelay: 20 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: 200 * time.Millisecond},
	MinConnectTimeout: time.Second,
})

// clientConfig is a test client's configuration for endpoints.
func clientConfig(endpoints []string, opts ...grpc.DialOption) clientv3.Config {
	return clientv3.Config{
		Endpoints:   endpoints,
		DialTimeout: 2 * time.Second,
		DialOptions: append([]grpc.DialOption{fastReconnect}, opts...),
		Logger:      zap.NewNop(),
	}
}

// client is a client of endpoints (every member's when none), closed in
// t's cleanup.
func newClient(t testing.TB, endpoints []string, opts ...grpc.DialOption) *clientv3.Client {
	t.Helper()
	c, err := clientv3.New(clientConfig(endpoints, opts...))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func (tc *testCluster) client(t testing.TB) *clientv3.Client {
	return newClient(t, tc.endpoints())
}

// ctxFor is a context bounded for one step of a test.
func ctxFor(t testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// kill stops the member at once, as a crash would (no leadership
// transfer), and closes it in the background; wait for that before a
// restart.
func (m *member) kill() (closed <-chan struct{}) {
	done := make(chan struct{})
	e := m.e
	m.e = nil
	e.Server.HardStop()
	go func() {
		e.Close()
		close(done)
	}()
	return done
}

// waitLeader waits until a running member leads, and returns its index.
func (tc *testCluster) waitLeader(t testing.TB) int {
	t.Helper()
	for _, m := range tc.members {
		if m.e == nil {
			continue
		}
		select {
		case <-m.e.Server.LeaderChangedNotify():
		default:
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) {
		if i := tc.leader(); i >= 0 {
			return i
		}
		// Polling the members' own view: etcd has no notice for "a
		// leader now exists" that covers every member at once.
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no leader within 10 s")
	return -1
}
