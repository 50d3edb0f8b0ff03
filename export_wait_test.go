package proclock

// SetTearDown makes f run the teardown of each acquisition's wait (given
// the wait's stop, which f must call) and returns what puts the default
// back.
func SetTearDown(f func(stop func())) (restore func()) {
	old := tearDown
	tearDown = f
	return func() { tearDown = old }
}

// BetweenAttempts is betweenAttempts: whether the Wait that calls it was
// called by attemptUntil itself, between attempts.
var BetweenAttempts = betweenAttempts
