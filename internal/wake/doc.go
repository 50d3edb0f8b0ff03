// Package wake is the one wait of every acquisition (Pause), on a
// platform's wake-up source (platform.Waker), and the optional powers of a
// Waker found by type assertion: a watch kept across the waits of one
// acquisition (Watcher) and a held lock's watch for changes
// (ChangeWatcher). The native linux platform and package fake have them.
package wake
