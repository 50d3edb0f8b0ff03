package cli

import (
	"time"

	"github.com/proclock/proclock"
)

// hostLoss is what the loss stop watches of a host lock: the library
// tells its loss (its file or .holder removed or replaced at the path);
// it has no deadline.
type hostLoss struct{ l *proclock.Lock }

// Lost: the host lock does not tell its loss yet (it comes with
// Lock.Lost); until then nothing stops COMMAND.
func (h hostLoss) Lost() <-chan struct{} { return nil }
func (h hostLoss) Err() error            { return nil }
func (hostLoss) Deadline() time.Time     { return time.Time{} }
