//go:build linux || windows

package platform_test

import (
	"testing"

	"github.com/proclock/proclock/platform"
)

// Where Self tells this process's identity, Lookup tells the same pid and
// start time, and Judge finds it alive, or dead when the start time or the
// boot differs.
func TestNativeLookupSelf(t *testing.T) {
	p := platform.Native().Process
	self := nativeSelf(t)
	info, err := p.Lookup(self.PID)
	if err != nil || !info.Exists || info.StartTime != self.StartTime {
		t.Errorf("Lookup(own pid) = %+v, %v; want exists with start time %d", info, err, self.StartTime)
	}
	if j := platform.Judge(self, self, p.Lookup); j.Verdict != platform.Alive || j.Reason != platform.ReasonRunning {
		t.Errorf("Judge(self, self) = %v (%s), want alive (%s)", j.Verdict, j.Reason, platform.ReasonRunning)
	}
	reused := self
	reused.StartTime += 2 // one apart is the same start, read through an offset clock
	if j := platform.Judge(self, reused, p.Lookup); j.Verdict != platform.Dead || j.Reason != platform.ReasonPIDReused {
		t.Errorf("Judge(own pid, other creation time) = %v (%s), want dead (%s)", j.Verdict, j.Reason, platform.ReasonPIDReused)
	}
	otherBoot := self
	otherBoot.BootID = "1999-12-31T23:59:59.0000000Z"
	if j := platform.Judge(self, otherBoot, p.Lookup); j.Verdict != platform.Dead || j.Reason != platform.ReasonOtherBoot {
		t.Errorf("Judge(another boot) = %v (%s), want dead (%s)", j.Verdict, j.Reason, platform.ReasonOtherBoot)
	}
}
