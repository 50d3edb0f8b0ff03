package cluster

import "time"

// ClockRate is the most this host's monotonic clock is taken to run slower
// than the etcd leader's, as a fraction: a granted TTL counts for
// TTL·(1-ClockRate) here. Quartz clocks drift by well under 0.01%; 1%
// covers a throttled or migrating VM (docs/cluster.md, "Clocks").
const ClockRate = 0.01

// validUntil is the local deadline one acknowledged keepalive gives: the
// server started its TTL when it received the keepalive, which is after it
// was sent here, so sent + TTL, counted with the clock rate bound and less
// the margin, comes before the server's expiry.
func validUntil(sent time.Time, granted, margin time.Duration) time.Time {
	return sent.Add(granted - time.Duration(float64(granted)*ClockRate) - margin)
}

// validity is a lease's local deadline as renewals come in. Only monotonic
// readings of this host's clock go into it; never a time from elsewhere.
type validity struct {
	deadline time.Time
	margin   time.Duration
}

// renewed takes a keepalive sent at sent that the server acknowledged with
// granted: the deadline moves to what it gives, never back (an old
// keepalive's late acknowledgement gives an earlier one).
func (v *validity) renewed(sent time.Time, granted time.Duration) {
	if d := validUntil(sent, granted, v.margin); d.After(v.deadline) {
		v.deadline = d
	}
}

// passed reports whether the deadline has passed at now.
func (v *validity) passed(now time.Time) bool { return !now.Before(v.deadline) }
