package proclock_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/proclock/proclock"
	"github.com/proclock/proclock/platform"
)

// TestLostNativePeriodic: the periodic look, which serves the platforms
// without a ChangeWatcher (windows, darwin, the BSDs, wasm), on this OS's
// files and real time: a native platform whose Wake is cleared is told of
// its lock file's removal by the next look, within a second, with either
// mechanism.
func TestLostNativePeriodic(t *testing.T) {
	for _, file := range []bool{false, true} {
		p := *platform.Native()
		p.Wake = nil
		q := &p
		if file {
			q = q.WithoutSQLite()
		}
		l, err := proclock.Acquire(context.Background(), q, filepath.Join(t.TempDir(), "app.lock"), proclock.Options{})
		mustDo(t, err)
		mustDo(t, l.Err())
		if err := os.Remove(l.Path()); err != nil {
			l.Release()
			t.Skipf("a held lock's file cannot be removed here: %v", err)
		}
		waitLost(t, l)
		if !errors.Is(l.Err(), proclock.ErrRemoved) {
			t.Fatalf("file %v: Err = %v; want ErrRemoved", file, l.Err())
		}
		l.Release()
	}
}
