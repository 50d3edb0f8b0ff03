package bench

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// built holds the commands BenchmarkStatusCold runs, built once a run
// into a temporary directory that TestMain removes.
var built struct {
	once sync.Once
	dir  string
	err  error
}

// buildCommands builds cmd/proclock and bench/cmd/flockprobe, once.
func buildCommands(b *testing.B) string {
	built.once.Do(func() {
		goCmd, err := exec.LookPath("go")
		if err != nil {
			built.err = err
			return
		}
		if built.dir, built.err = os.MkdirTemp("", "proclock-bench-"); built.err != nil {
			return
		}
		for _, pkg := range []string{"github.com/proclock/proclock/cmd/proclock", "github.com/proclock/proclock/bench/cmd/flockprobe"} {
			cmd := exec.Command(goCmd, "build", "-o", built.dir, pkg)
			cmd.Stderr = os.Stderr
			if err := cmd.Run(); err != nil {
				built.err = err
				return
			}
		}
	})
	if errors.Is(built.err, exec.ErrNotFound) {
		b.Skip("no go command to build cmd/proclock with:", built.err)
	}
	if built.err != nil {
		b.Fatal(built.err)
	}
	return built.dir
}

func removeBuilt() {
	if built.dir != "" {
		os.RemoveAll(built.dir)
	}
}

// BenchmarkStatusCold: the wall time of one run of `proclock status PATH`,
// a new process each time (the page cache warm), beside the smallest
// gofrs/flock program that tells the same (bench/cmd/flockprobe), on a
// free lock whose file exists and on one a live process holds.
func BenchmarkStatusCold(b *testing.B) {
	ctx := context.Background()
	for _, c := range []struct{ name, command, kind string }{
		{"proclock-status", "proclock", kindSQLite},
		{"flockprobe", "flockprobe", kindFlock},
	} {
		for _, held := range []bool{false, true} {
			name := c.name + "/free"
			if held {
				name = c.name + "/held"
			}
			b.Run(name, func(b *testing.B) {
				bin := filepath.Join(buildCommands(b), c.command)
				path := filepath.Join(b.TempDir(), "app.lock")
				release, err := take(ctx, c.kind, path, false)
				if err != nil {
					b.Fatal(err)
				}
				if err := release(); err != nil {
					b.Fatal(err)
				}
				if held {
					holding(b, c.kind, path)
				}
				args := []string{path}
				if c.command == "proclock" {
					args = []string{"status", path}
				}
				want := 0
				if held {
					want = 1
				}
				for b.Loop() {
					err := exec.Command(bin, args...).Run()
					code := 0
					if exit, ok := errors.AsType[*exec.ExitError](err); ok {
						code = exit.ExitCode()
					} else if err != nil {
						b.Fatal(err)
					}
					if code != want {
						b.Fatalf("%s %v: exit %d, want %d", bin, args, code, want)
					}
				}
			})
		}
	}
}
