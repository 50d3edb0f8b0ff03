// Command devetcd runs one etcd member (v3.7.3, embedded) on loopback, for
// trying cluster locks on one machine: no install, nothing but the Go
// module proxy. Its data lives in a temporary directory, removed on exit
// (Ctrl-C). It is not for production: run etcd itself there.
//
//	cd cluster && go run ./cmd/devetcd            # 127.0.0.1:2379
//	cd cluster && go run ./cmd/devetcd -listen 127.0.0.1:23790
package main

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"syscall"

	"go.etcd.io/etcd/server/v3/embed"
	"go.uber.org/zap"
)

func main() {
	listen := flag.String("listen", "127.0.0.1:2379", "client address (host:port)")
	peer := flag.String("peer", "127.0.0.1:2380", "peer address (host:port)")
	dir := flag.String("data", "", "data directory (default: a temporary one, removed on exit)")
	flag.Parse()
	if err := run(*listen, *peer, *dir); err != nil {
		fmt.Fprintln(os.Stderr, "devetcd:", err)
		os.Exit(1)
	}
}

func run(listen, peer, dir string) error {
	if dir == "" {
		tmp, err := os.MkdirTemp("", "devetcd-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	}
	cfg := embed.NewConfig()
	cfg.Name, cfg.Dir = "devetcd", dir
	// etcd logs its own shutdown at level error ("server closed"); what
	// fails is returned, and said here.
	cfg.ZapLoggerBuilder = embed.NewZapLoggerBuilder(zap.NewNop())
	cu := url.URL{Scheme: "http", Host: listen}
	pu := url.URL{Scheme: "http", Host: peer}
	cfg.ListenClientUrls, cfg.AdvertiseClientUrls = []url.URL{cu}, []url.URL{cu}
	cfg.ListenPeerUrls, cfg.AdvertisePeerUrls = []url.URL{pu}, []url.URL{pu}
	cfg.InitialCluster = cfg.Name + "=" + pu.String()
	e, err := embed.StartEtcd(cfg)
	if err != nil {
		return err
	}
	defer e.Close()
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, os.Interrupt, syscall.SIGTERM)
	select {
	case <-e.Server.ReadyNotify():
		fmt.Printf("etcd v3.7.3 serving on %s (data in %s); Ctrl-C stops it\n", listen, dir)
	case err := <-e.Err():
		return err
	case <-stop:
		return nil
	}
	select {
	case err := <-e.Err():
		return err
	case <-stop:
		return nil
	}
}
