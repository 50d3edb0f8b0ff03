package cli

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/proclock/proclock"
)

// TestNotRenewing: a cluster holder is told not renewing only when less
// than a third of its TTL is surely left (etcd counts whole seconds,
// rounded down), and status --json says so with the TTL left in
// milliseconds. Issue 29's status had neither.
func TestNotRenewing(t *testing.T) {
	for _, c := range []struct {
		ttl, left time.Duration
		want      bool
	}{
		{10 * time.Second, 9 * time.Second, false},
		{10 * time.Second, 3 * time.Second, false}, // up to 4 s left: a third is 3.3 s
		{10 * time.Second, 2 * time.Second, true},
		{10 * time.Second, 0, true},
		{3 * time.Second, 0, true},
		{2 * time.Second, 0, false}, // under 1 s of 2: cannot be told
		{0, 0, false},               // TTL unknown
	} {
		rep := Report{Status: proclock.Status{State: proclock.StateHeld}, Cluster: &ClusterStatus{TTL: c.ttl, TTLLeft: c.left}}
		if got := notRenewing(rep.Cluster); got != c.want {
			t.Errorf("TTL %v, %v left: not renewing %v, want %v", c.ttl, c.left, got, c.want)
		}
		rep.Cluster.NotRenewing = c.want
		b, err := json.Marshal(reportRecord(rep, startedAt))
		if err != nil {
			t.Fatal(err)
		}
		var m map[string]any
		json.Unmarshal(b, &m)
		if _, ok := m["notRenewing"]; ok != c.want {
			t.Errorf("TTL %v, %v left: %s; want notRenewing %v", c.ttl, c.left, b, c.want)
		}
		if ms, ok := m["ttlLeftMs"].(float64); c.ttl > 0 && (!ok || int64(ms) != c.left.Milliseconds()) {
			t.Errorf("TTL %v, %v left: %s; want ttlLeftMs %d", c.ttl, c.left, b, c.left.Milliseconds())
		}
	}
	if !strings.Contains(notRenewingReason, "not renewing") {
		t.Errorf("the reason %q does not say it", notRenewingReason)
	}
}
