package conformance

import (
	"testing"

	"github.com/proclock/proclock"
)

// The behaviour cases through their own entry point, on the fake world:
// what a backend whose locks are not files runs (the cluster module runs
// them on etcd).
func TestBehaviourFake(t *testing.T) {
	for _, mech := range []proclock.Mechanism{proclock.MechanismFile, proclock.MechanismSQLite} {
		t.Run(string(mech), func(t *testing.T) { RunBehaviour(t, harnessBackend{Fake(mech)}) })
	}
}
