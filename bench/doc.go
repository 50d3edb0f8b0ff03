// Package bench measures proclock beside other ways of holding a lock, in
// one run: github.com/gofrs/flock (flock(2), kernel-released, no holder
// identity) and a bare O_EXCL lock file. It is a module of its own so that
// users of proclock never download the peers.
//
//	cd bench && go test -bench . -benchmem
package bench
