package proclock

// BetweenAttempts is betweenAttempts: whether the Wait that calls it was
// called by attemptUntil itself, between attempts.
var BetweenAttempts = betweenAttempts
