// Package app is a small daemon that must not run twice on one machine,
// and the worked example of docs/testing.md: Run takes the lock and works
// while it holds it, Running tells whether an instance runs. Both take
// their world as a *platform.Platform, so that main hands them
// platform.Native() and the tests a fake world's process
// (app_test.go).
package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// ErrAlreadyRunning is matched by Run's error when another instance holds
// the lock. The error matches proclock.ErrHeld too, and errors.As finds
// the *proclock.HeldError that names the running instance.
var ErrAlreadyRunning = errors.New("app: already running")

// Config says where an instance runs and how it starts.
type Config struct {
	// Platform is the world the lock lives in: platform.Native() in main,
	// a fake process's Platform in tests.
	Platform *platform.Platform
	// LockPath is the lock's path.
	LockPath string
	// Wait makes Run wait for the running instance to finish, until ctx
	// ends, instead of failing at once.
	Wait bool
}

// Run takes the lock and runs work while holding it, then lets go. Should
// the lock be lost while work runs (its file removed by a tmp cleaner, say),
// work's context is cancelled, its cause the loss, and Run's error matches
// proclock.ErrLost: another instance may be starting.
func Run(ctx context.Context, cfg Config, work func(context.Context) error) error {
	lock, err := proclock.Acquire(ctx, cfg.Platform, cfg.LockPath, proclock.Options{Wait: cfg.Wait})
	if errors.Is(err, proclock.ErrHeld) {
		return fmt.Errorf("%w: %w", ErrAlreadyRunning, err)
	}
	if err != nil {
		return fmt.Errorf("app: %w", err)
	}
	defer lock.Release()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lock.Lost():
			cancel(lock.Err())
		case <-ctx.Done():
		}
	}()
	err = work(ctx)
	if lost := lock.Err(); lost != nil {
		return fmt.Errorf("app: %w", lost)
	}
	return err
}

// Running reports whether an instance runs, without starting one.
func Running(ctx context.Context, p *platform.Platform, lockPath string) (bool, error) {
	return proclock.IsHeld(ctx, p, lockPath)
}
