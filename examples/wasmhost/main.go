// Command wasmhost runs a wasip1 agent that takes proclock locks, embedding
// wazero: the code an agent platform copies to host such agents. See
// docs/wasm.md.
//
//	wasmhost [-proc DIR] [-cache DIR] GUEST.wasm LOCKDIR [ARGS...]
//
// The guest gets LOCKDIR read-write, at the same path, and /proc read-only:
// it reads the identity of this host process there (its pid, start time,
// boot id, host name, pid namespace) and judges the holders it finds by
// /proc/<pid>/stat. The guest lives and dies with this process, so this
// process's identity is the guest's. ARGS go to the guest; its exit code is
// wasmhost's.
package main

import (
	"context"
	"crypto/rand"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"

	"github.com/tetratelabs/wazero"
	experimentalsys "github.com/tetratelabs/wazero/experimental/sys"
	"github.com/tetratelabs/wazero/experimental/sysfs"
	"github.com/tetratelabs/wazero/imports/wasi_snapshot_preview1"
	"github.com/tetratelabs/wazero/sys"
)

func main() {
	proc := flag.String("proc", "/proc", "the host's procfs, mounted read-only at /proc in the guest; \"\" mounts none")
	cache := flag.String("cache", "", "a directory to keep compiled guests in, so that a second start does not compile again")
	flag.Parse()
	if flag.NArg() < 2 {
		fmt.Fprintln(os.Stderr, "usage: wasmhost [-proc DIR] [-cache DIR] GUEST.wasm LOCKDIR [ARGS...]")
		os.Exit(2)
	}
	code, err := run(context.Background(), *proc, *cache, flag.Arg(0), flag.Arg(1), flag.Args()[2:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "wasmhost:", err)
	}
	os.Exit(code)
}

func run(ctx context.Context, proc, cache, guest, lockDir string, args []string) (int, error) {
	wasm, err := os.ReadFile(guest)
	if err != nil {
		return 2, err
	}
	config := wazero.NewRuntimeConfig()
	if cache != "" {
		c, err := wazero.NewCompilationCacheWithDir(cache)
		if err != nil {
			return 2, err
		}
		config = config.WithCompilationCache(c)
	}
	r := wazero.NewRuntimeWithConfig(ctx, config)
	defer r.Close(ctx)
	wasi_snapshot_preview1.MustInstantiate(ctx, r)

	// lockFS, not WithDirMount: wazero creates every file a guest
	// creates with mode 0600, so another user of the lock's group could
	// not take a lock a guest created.
	fsConfig := wazero.NewFSConfig().(sysfs.FSConfig).WithSysFSMount(lockFS{sysfs.DirFS(lockDir)}, lockDir)
	if proc != "" {
		fsConfig = fsConfig.WithReadOnlyDirMount(proc, "/proc")
	}
	module := wazero.NewModuleConfig().
		WithArgs(append([]string{"guest"}, args...)...).
		WithStdin(os.Stdin).WithStdout(os.Stdout).WithStderr(os.Stderr).
		WithFSConfig(fsConfig).
		// wazero's defaults are a fake clock and a fixed random seed, for
		// reproducible runs. A lock needs real ones: the stamp's time and
		// the waits' back-off are real time, and two guests must never
		// draw the same nonce.
		WithSysWalltime().WithSysNanotime().WithSysNanosleep().
		WithRandSource(rand.Reader)
	_, err = r.InstantiateWithConfig(ctx, wasm, module)
	if exit, ok := errors.AsType[*sys.ExitError](err); ok {
		return int(exit.ExitCode()), nil
	}
	if err != nil {
		return 2, err
	}
	return 0, nil
}

// createMode is the mode the guest's files are created with, before the
// umask: a native proclock's (docs/security.md, "The files"), so that a
// group's lock works alike whoever created its files. WASI gives a guest
// no mode to create with and no chmod, and wazero creates with 0600
// whatever the umask (its path_open); the kernel applies this process's
// umask to createMode, as it does for a native proclock.
const createMode fs.FileMode = 0o664

// lockFS is the lock's directory as the guest sees it: wazero's own
// directory filesystem, but files are created with createMode.
type lockFS struct{ experimentalsys.FS }

func (l lockFS) OpenFile(path string, flag experimentalsys.Oflag, perm fs.FileMode) (experimentalsys.File, experimentalsys.Errno) {
	if flag&experimentalsys.O_CREAT != 0 {
		perm = createMode
	}
	return l.FS.OpenFile(path, flag, perm)
}
