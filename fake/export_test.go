package fake

// Sleepers returns how many sleeps are blocked on w's frozen clock now.
func Sleepers(w *World) int {
	c := w.u.clock
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.sleepers)
}
