package platform

// Verdict is what Judge decides about a recorded holder.
type Verdict int

const (
	// Alive: the holder runs; its lock stands.
	Alive Verdict = iota
	// Dead: the holder is gone for certain; its lock may be reclaimed.
	Dead
	// Unknown: the holder cannot be judged from here (another host,
	// another pid namespace); its lock stands, whatever its age.
	Unknown
)

// String returns the verdict as a word: "alive", "dead" or "unknown".
func (v Verdict) String() string {
	if v < 0 || int(v) >= len(verdictWords) {
		return "Verdict(?)"
	}
	return verdictWords[v]
}

var verdictWords = [...]string{Alive: "alive", Dead: "dead", Unknown: "unknown"}

// Reason says why Judge reached its verdict.
type Reason string

// The reasons Judge gives.
const (
	ReasonOtherHost      Reason = "other host"
	ReasonOtherNamespace Reason = "other pid namespace"
	ReasonOtherBoot      Reason = "other boot"
	ReasonPIDGone        Reason = "pid gone"
	ReasonPIDReused      Reason = "pid reused"
	ReasonRunning        Reason = "running"
	ReasonLookupFailed   Reason = "lookup failed"
)

// Judgement is Judge's answer.
type Judgement struct {
	Verdict Verdict
	Reason  Reason
	// Err is the lookup error when Reason is ReasonLookupFailed.
	Err error
}

// Judge decides from here, this process's identity, whether holder, a
// recorded identity, is alive, dead or cannot be judged. lookup reads facts
// about a pid of this host; Judge calls it at most once, and only for a
// holder of this host, boot and pid namespace. Empty or zero fields of
// holder are unknown and not compared: a holder with no host (a bare
// legacy pid) is of this host; one with no start time is judged by its pid.
// A lookup that fails is never taken as death.
func Judge(here, holder Identity, lookup func(pid int) (PIDInfo, error)) Judgement {
	switch {
	case holder.Host != "" && holder.Host != here.Host:
		return Judgement{Verdict: Unknown, Reason: ReasonOtherHost}
	case holder.BootID != "" && here.BootID != "" && holder.BootID != here.BootID:
		// Before the namespace: no process of an earlier boot lives
		// (docs/design.md, "Judge order").
		return Judgement{Verdict: Dead, Reason: ReasonOtherBoot}
	case holder.PIDNamespace != 0 && here.PIDNamespace != 0 && holder.PIDNamespace != here.PIDNamespace:
		return Judgement{Verdict: Unknown, Reason: ReasonOtherNamespace}
	case holder.PID <= 0:
		return Judgement{Verdict: Dead, Reason: ReasonPIDGone}
	}
	info, err := lookup(holder.PID)
	switch {
	case err != nil:
		return Judgement{Verdict: Alive, Reason: ReasonLookupFailed, Err: err}
	case !info.Exists:
		return Judgement{Verdict: Dead, Reason: ReasonPIDGone}
	case holder.StartTime != 0 && info.StartTime != 0 && !sameStart(here, holder, info.StartTime):
		return Judgement{Verdict: Dead, Reason: ReasonPIDReused}
	}
	return Judgement{Verdict: Alive, Reason: ReasonRunning}
}

// sameStart reports whether the holder's start time and now's are one
// process's: equal, or a unit apart through an offset clock (BootOffset).
func sameStart(here, holder Identity, now uint64) bool {
	offset := holder.BootOffset != 0 || here.BootOffset != 0
	return holder.StartTime == now || offset && (holder.StartTime+1 == now || now+1 == holder.StartTime)
}
