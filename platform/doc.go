// Package platform is everything a proclock lock knows of the world: a
// filesystem, SQLite, this process's identity and facts about other
// processes, and a clock. Native returns the platform of the running OS;
// package fake builds hermetic ones. Judge decides, from a recorded
// Identity, whether a lock's holder is alive, dead, or cannot be judged.
package platform
