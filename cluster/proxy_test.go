package cluster

import (
	"net"
	"sync"
	"testing"
)

// proxy is a loopback TCP proxy in front of one etcd member that can
// blackhole its connections (bytes read and dropped, sockets kept open, in
// both directions, for new connections too), drop only the replies, or
// cut every connection.
type proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	blackhole bool
	replies   bool // drop server-to-client bytes
	down      bool // refuse connections, as a stopped server does
	conns     []net.Conn
}

func newProxy(t testing.TB, target string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln, target: target}
	go p.serve()
	t.Cleanup(p.close)
	return p
}

func (p *proxy) addr() string { return p.ln.Addr().String() }

func (p *proxy) serve() {
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		down := p.down
		p.mu.Unlock()
		if down {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.mu.Unlock()
		go p.pipe(s, c, false)
		go p.pipe(c, s, true)
	}
}

// pipe copies from src to dst, dropping what the proxy's mode drops.
func (p *proxy) pipe(dst, src net.Conn, reply bool) {
	defer dst.Close()
	defer src.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 && !p.drops(reply) {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

func (p *proxy) drops(reply bool) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.blackhole || (reply && p.replies)
}

// setBlackhole drops every byte from now on (or no longer).
func (p *proxy) setBlackhole(on bool) {
	p.mu.Lock()
	p.blackhole = on
	p.mu.Unlock()
}

// setDropReplies drops the server's replies from now on (or no longer):
// requests still reach it.
func (p *proxy) setDropReplies(on bool) {
	p.mu.Lock()
	p.replies = on
	p.mu.Unlock()
}

// setDown refuses connections from now on (or no longer), and cuts those
// there are: a stopped server, while the socket stays bound.
func (p *proxy) setDown(on bool) {
	p.mu.Lock()
	p.down = on
	p.mu.Unlock()
	if on {
		p.cut()
	}
}

// cut closes every connection; new ones are still served.
func (p *proxy) cut() {
	p.mu.Lock()
	conns := p.conns
	p.conns = nil
	p.mu.Unlock()
	for _, c := range conns {
		c.Close()
	}
}

func (p *proxy) close() {
	p.ln.Close()
	p.cut()
}
