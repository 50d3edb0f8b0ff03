package proclock_test

// The explorations' CPU is measured on linux (processCPU).
func init() { exploreCPU = processCPU }
