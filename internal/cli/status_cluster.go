package cli

import (
	"strconv"
	"time"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// goneHolderReason is what status says of a cluster lock whose holder,
// of this host, is dead: nobody renews its lease, which the server
// expires when its TTL runs out (the TTL left is among the facts).
const goneHolderReason = "its proclock is gone: the lease is not renewed, and the lock passes on when its TTL runs out"

// notRenewingReason is what status says of a cluster lock whose holder
// lets its lease run down, wherever it is.
const notRenewingReason = "its holder is not renewing its lease (gone, or cut off from etcd): the lock passes on when its TTL runs out"

// notRenewing reports whether a cluster lock's holder has stopped renewing
// its lease: less than a third of the TTL is left. A holder renews a third
// of the TTL after its last renewal (proclock; etcd's client within half
// a second more), so one that renews keeps more. etcd counts whole seconds,
// rounded down: a second more may be left than it says.
func notRenewing(c *ClusterStatus) bool {
	return c.TTL > 0 && 3*(c.TTLLeft+time.Second) <= c.TTL
}

// statusHelp is status's help, with the backends' parts.
func statusHelp(backends []Backend) string {
	help := statusUsage + exitTable(statusExits, backends) + "\n" + statusTail
	for _, b := range backends {
		help += "\n" + b.Usage()
	}
	return help
}

// jsonClusterStatus is status --json for a cluster lock: format 1's
// fields, and the cluster's after them.
type jsonClusterStatus struct {
	jsonStatus
	Endpoints []string `json:"endpoints"`
	Name      string   `json:"name"`
	Key       string   `json:"key,omitempty"`
	Fence     int64    `json:"fence,omitempty"`
	// Lease is in hex, as etcdctl writes it and as it ends the key.
	Lease          string   `json:"lease,omitempty"`
	TTLSeconds     *float64 `json:"ttlSeconds,omitempty"`
	TTLLeftSeconds *float64 `json:"ttlLeftSeconds,omitempty"`
	// TTLLeftMs is TTLLeftSeconds in milliseconds; NotRenewing is set
	// when the holder lets its lease run down (notRenewing, or its
	// proclock on this host is gone).
	TTLLeftMs      *int64 `json:"ttlLeftMs,omitempty"`
	NotRenewing    bool   `json:"notRenewing,omitempty"`
	Waiters        int    `json:"waiters"`
	LockDelay      bool   `json:"lockDelay"`
	LockDelayUntil string `json:"lockDelayUntil,omitempty"`
	Unclean        bool   `json:"unclean,omitempty"`
	Revision       int64  `json:"revision"`
}

// reportRecord is rep as status --json prints it: statusRecord's object,
// with the cluster's fields when rep has them.
func reportRecord(rep Report, started func(platform.Identity) (time.Time, bool)) any {
	r := statusRecord(rep.Status, started)
	c := rep.Cluster
	if c == nil {
		return r
	}
	cr := jsonClusterStatus{jsonStatus: r, Endpoints: c.Endpoints, Name: c.Name, Key: c.Key, Fence: c.Fence,
		Waiters: c.Waiters, LockDelay: c.LockDelay, Unclean: c.Unclean, Revision: c.Revision, NotRenewing: c.NotRenewing}
	if cr.Endpoints == nil {
		cr.Endpoints = []string{}
	}
	if c.Lease != 0 {
		cr.Lease = strconv.FormatInt(c.Lease, 16)
	}
	if c.TTL > 0 {
		ttl, left, ms := c.TTL.Seconds(), c.TTLLeft.Seconds(), c.TTLLeft.Milliseconds()
		cr.TTLSeconds, cr.TTLLeftSeconds, cr.TTLLeftMs = &ttl, &left, &ms
	}
	if c.LockDelay && !c.LockDelayUntil.IsZero() {
		cr.LockDelayUntil = rfc3339(c.LockDelayUntil)
	}
	return cr
}

// describeReport words a backend's report for people: describeStatus's
// lines, and a cluster lock's own facts on a line of their own.
func describeReport(rep Report) string {
	c := rep.Cluster
	switch {
	case rep.State == proclock.StateAbsent && c != nil && c.Unclean:
		return sprintf("%s: free (no key; mechanism %s); its last holder did not let go cleanly: the next holder serves the lock-delay\n",
			rep.Path, rep.Mechanism)
	case rep.State == proclock.StateAbsent && c != nil:
		return sprintf("%s: free (no key; mechanism %s)\n", rep.Path, rep.Mechanism)
	case rep.State == proclock.StateHeld:
		text := describeStatus(rep.Status)
		if facts := clusterFacts(c); len(facts) > 0 {
			text += sprintf("  %s\n", joinFacts(facts))
		}
		return text
	}
	return describeStatus(rep.Status)
}
