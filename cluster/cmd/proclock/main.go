// Command proclock is the proclock command (github.com/proclock/proclock/cmd/proclock)
// with cluster locks on etcd besides the host's: one program for both.
//
//	cd cluster && go install ./cmd/proclock    # from a checkout
//
// A lock name etcd://ENDPOINTS/NAME is a cluster lock (the NAME etcdctl
// lock takes, so that both exclude each other); any other is a PATH on
// this host, as before:
//
//	proclock run etcd://127.0.0.1:2379/jobs/backup -- /usr/local/bin/backup
//	proclock run -n etcd:///jobs/backup -- make deploy   # $ETCDCTL_ENDPOINTS
//	proclock status --json etcd://h1:2379,h2:2379,h3:2379/jobs/backup
//	proclock run /run/backup/backup.lock -- /usr/local/bin/backup
//
// run and status take the options they take for a host lock (-n, -w, -E,
// -c, -v, --json, the signal rules), and a cluster lock's own: --ttl,
// --lock-delay, --connect-timeout. COMMAND gets PROCLOCK_FENCE,
// PROCLOCK_KEY and PROCLOCK_LEASE. When the lock is lost while COMMAND
// runs, run stops COMMAND's whole process group before the server can give
// the lock to anyone else: SIGTERM the grace (--grace) before the lease's
// local deadline, SIGKILL at it; then it exits 125. Exit codes: COMMAND's;
// 1 (or -E's CODE) held; 124 a wait that ran out; 125 lost; 123 etcd not
// reachable within --connect-timeout; 2 errors. "proclock help run" has it
// all; docs/cluster.md ("The command") and docs/command.md say why.
package main

import (
	"os"

	"github.com/proclock/proclock/internal/cli"
)

func main() {
	os.Exit(cli.Main(os.Args[1:], os.Stdin, os.Stdout, os.Stderr, newEtcdBackend()))
}
