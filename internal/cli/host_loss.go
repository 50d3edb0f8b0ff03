package cli

import (
	"time"

	"github.com/proclock/proclock"
)

// hostLoss is what the loss stop watches of a host lock: the library
// tells its loss (its file or .holder removed or replaced at the path,
// its directory gone) through Lock.Lost and Lock.Err; it has no
// deadline. On a loss, run stops COMMAND's group as for a cluster lock's
// event: SIGTERM, then SIGKILL after the grace (2 s unless --grace), and
// exits 125: the path is free to take for anyone else at once, and COMMAND
// must not outlive the lock (docs/command.md, "When the lock is lost").
type hostLoss struct{ *proclock.Lock }

// Deadline is the zero time: a host lock is lost only by an event.
func (hostLoss) Deadline() time.Time { return time.Time{} }
