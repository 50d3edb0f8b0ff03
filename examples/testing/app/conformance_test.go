package app_test

import (
	"os"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/conformance"
)

// Native peers are this test binary run again as real processes: it must
// serve them before anything else.
func TestMain(m *testing.M) {
	conformance.MaybeServePeer()
	os.Exit(m.Run())
}

// proclock's whole suite, in fake worlds, for both mechanisms.
func TestConformanceFake(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismSQLite, proclock.MechanismFile} {
		t.Run(string(mech), func(t *testing.T) {
			conformance.Run(t, conformance.Fake(mech))
		})
	}
}

// The suite again with real processes on this machine's filesystem, in
// a temporary directory, killed with SIGKILL.
func TestConformanceNative(t *testing.T) {
	conformance.Run(t, conformance.Native(proclock.MechanismSQLite))
}
