// Package wake is the one wait of every acquisition (Pause), on a
// platform's wake-up source (platform.Waker), and the optional powers of a
// Waker that the library finds by type assertion: a watch kept across the
// waits of one acquisition (Watcher) and a held lock's watch for changes
// (ChangeWatcher). A Waker has them by having their methods: the native
// linux platform and package fake do.
package wake
