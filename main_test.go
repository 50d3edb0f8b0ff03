package proclock_test

import (
	"testing"

	"github.com/proclock/proclock/internal/locktest"
)

// Tests that need another process re-execute this test binary in a role
// (locktest.NewRole): holders, helpers of the security tests.
func TestMain(m *testing.M) { locktest.Main(m) }
