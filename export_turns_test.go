package proclock

// TurnsEmpty reports whether no lock is held or attempted in this process.
func TurnsEmpty() bool { return turns.empty() }
