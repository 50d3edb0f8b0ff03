package stamplock_test

import (
	"testing"

	"github.com/proclock/proclock/internal/locktest"
)

// Tests that need another process re-execute this test binary in a role
// (locktest.DeadPID's).
func TestMain(m *testing.M) { locktest.Main(m) }
