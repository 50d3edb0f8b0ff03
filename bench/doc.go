// Package bench measures proclock beside other ways of holding a lock, in
// one run: the raw kernel and file paths (flock(2), OFD locks, an O_EXCL
// lock file), github.com/gofrs/flock, go-internal's lockedfile and
// github.com/nightlyone/lockfile. It is a module of its own so that users
// of proclock never download the peers, and it runs on linux only (the raw
// paths, /proc, rusage). README.md has the commands; docs/performance.md
// the figures.
//
// The benchmarks re-execute the test binary as helper processes: holders,
// waiters, contenders (helper_linux_test.go).
//
//	cd bench && go test -run '^$' -bench . -benchmem
package bench
