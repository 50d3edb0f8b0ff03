package cluster

import (
	"encoding/json"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/proclock/proclock/platform"
)

// keyFormat marks the value of a lock key written by this package.
const keyFormat = "proclock-cluster/1"

// handoffFormat marks a handoff record.
const handoffFormat = "proclock-cluster-handoff/1"

// HandoffSuffix, appended to a lock's name, is the key of its handoff
// record: who took the lock last, and whether it let go cleanly. It is
// outside the lock's prefix NAME/, where etcdctl would take any key for a
// holder. The record has no lease: it outlives its holders, one key per
// lock name.
const HandoffSuffix = ".proclock-handoff"

// queued is the value of a lock key of this package: who queued it.
type queued struct {
	Format string `json:"format"`
	platform.Identity
	// QueuedAt is when the key was created, by the writer's wall clock
	// (for people; never compared with another host's clock).
	QueuedAt time.Time `json:"queuedAt"`
	// TTL is the lease's TTL as granted, in seconds.
	TTL int64 `json:"ttl"`
	// User and Command are, for people, who runs the writer (as its
	// environment names the user, else its uid) and its command line.
	User    string   `json:"user,omitempty"`
	Command []string `json:"command,omitempty"`
}

// userName names this process's user, for people: $USER or $LOGNAME (or
// windows' $USERNAME), else the uid; "" when none is known. os/user would
// need cgo on some systems to say more.
func userName() string {
	for _, v := range []string{"USER", "LOGNAME", "USERNAME"} {
		if u := os.Getenv(v); u != "" {
			return u
		}
	}
	if uid := os.Getuid(); uid >= 0 {
		return strconv.Itoa(uid)
	}
	return ""
}

// parseQueued reads a lock key's value; ok is false for a value this
// package did not write (etcdctl's empty one, another tool's).
func parseQueued(v []byte) (q queued, ok bool) {
	if len(v) == 0 || v[0] != '{' {
		return queued{}, false
	}
	if err := json.Unmarshal(v, &q); err != nil || q.Format != keyFormat {
		return queued{}, false
	}
	return q, true
}

// handoff is the record at NAME + HandoffSuffix.
type handoff struct {
	Format string `json:"format"`
	// Key, Fence and Lease are the acquisition that took the lock last.
	Key   string `json:"key"`
	Fence int64  `json:"fence"`
	Lease string `json:"lease"`
	// Holder is who took it; nil when its identity is unknown.
	Holder *platform.Identity `json:"holder,omitempty"`
	// AcquiredAt is when it took the lock (its wall clock, for people).
	AcquiredAt time.Time `json:"acquiredAt"`
	// Released: it let go cleanly (Release), and never lost the lock.
	Released bool `json:"released"`
	// Delaying: it found no clean release of its predecessor and is
	// serving the lock-delay, until DelayUntil (its wall clock).
	Delaying   bool      `json:"delaying,omitempty"`
	DelayUntil time.Time `json:"delayUntil,omitzero"`
}

func (h handoff) marshal() string {
	h.Format = handoffFormat
	b, err := json.Marshal(h)
	if err != nil {
		// Strings, integers, times and an Identity always encode.
		panic("cluster: encoding a handoff record: " + err.Error())
	}
	return string(b)
}

// parseHandoff reads a handoff record; ok is false when there is none or
// it is not one.
func parseHandoff(v []byte) (h handoff, ok bool) {
	if err := json.Unmarshal(v, &h); err != nil || h.Format != handoffFormat {
		return handoff{}, false
	}
	return h, true
}

// leaseHex is a lease id as etcdctl writes it in a key.
func leaseHex(id int64) string { return strconv.FormatInt(id, 16) }

// self is this process's identity, read once; nil when unknown.
var self = sync.OnceValue(func() *platform.Identity {
	p := platform.Native()
	if p.Process == nil {
		return nil
	}
	id, err := p.Process.Self()
	if err != nil || id.PID <= 0 {
		return nil
	}
	return &id
})

func marshalQueued(q queued) string {
	b, err := json.Marshal(q)
	if err != nil {
		panic("cluster: encoding a lock key's value: " + err.Error())
	}
	return string(b)
}
