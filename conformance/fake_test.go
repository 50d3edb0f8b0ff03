package conformance_test

import (
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
)

func TestFake(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismFile, proclock.MechanismSQLite} {
		t.Run(string(mech), func(t *testing.T) {
			conformance.Run(t, conformance.Fake(mech))
		})
	}
}
