// Command appd is the example daemon of docs/testing.md, run for real:
// one instance per user, which says who runs when started twice.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"

	"github.com/proclock/proclock/examples/testing/app"
	"github.com/proclock/proclock/platform"
)

func main() {
	dir, err := os.UserCacheDir() // a directory only this user can write: docs/security.md
	if err != nil {
		log.Fatal(err)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	cfg := app.Config{Platform: platform.Native(), LockPath: filepath.Join(dir, "appd.lock")}
	err = app.Run(ctx, cfg, func(ctx context.Context) error {
		fmt.Println("running; Ctrl-C to stop")
		<-ctx.Done()
		return nil
	})
	if errors.Is(err, app.ErrAlreadyRunning) {
		log.Fatal(err) // app: already running: proclock: <path> is held by pid 4242 on buildhost
	}
	if err != nil {
		log.Fatal(err)
	}
}
