package lockfs

// SweepKeptLooks runs the idle sweep of the kept looks' descriptors once.
func SweepKeptLooks() { keptLooks.sweep() }
