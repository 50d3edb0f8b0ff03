package conformance_test

import (
	"os"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
)

func TestMain(m *testing.M) {
	conformance.MaybeServePeer()
	os.Exit(m.Run())
}

func TestNative(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
		t.Run(string(mech), func(t *testing.T) {
			conformance.Run(t, conformance.Native(mech))
		})
	}
}
