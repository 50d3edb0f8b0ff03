package stamplock

import (
	"sync"

	"github.com/proclock/proclock/internal/lockrec"
	"github.com/proclock/proclock/platform"
)

// ReasonLeftHere: a stamp this very process wrote, whose Lock's Release
// failed (leftHere): stale to this process, held to every other.
const ReasonLeftHere platform.Reason = "left by this process"

// leftBehind holds the nonces of the stamps (of locks and guards) whose
// Release failed in this process: a directory made read-only, a name
// mounted over. Such a Lock is no longer this process's to use (its turn
// is left), so no live Lock of this process relies on its stamp. It only
// grows by failed releases.
var leftBehind sync.Map

// leaveBehind records that the stamp with nonce is left behind.
func leaveBehind(nonce string) { leftBehind.Store(nonce, struct{}{}) }

// leftHere reports whether stamp is this process's own leftover: ours
// (the format marker), naming here's very process, and of a Lock whose
// Release failed. No other process writes a stamp with here's identity,
// and nonces are random, so it is no live holder's: it is judged as a
// dead holder's is, by this process alone; others, who cannot know, go
// on judging it alive until this process exits (docs/protocol.md, "File
// release").
func leftHere(here platform.Identity, stamp *lockrec.Record) bool {
	if stamp == nil || stamp.Foreign || stamp.Format != lockrec.Format {
		return false
	}
	id := stamp.Identity
	if id.PID != here.PID || id.Host != here.Host || id.BootID != here.BootID ||
		id.StartTime != here.StartTime || id.PIDNamespace != here.PIDNamespace {
		return false
	}
	_, ok := leftBehind.Load(stamp.Nonce)
	return ok
}
