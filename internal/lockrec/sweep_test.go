package lockrec_test

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/proclock/proclock/fake"
	"github.com/proclock/proclock/internal/lockrec"
)

// TestSweepAsPathIsSpelled: a dead writer's temporary file is swept
// however the lock's path spells its directory: with "/" (a separator on
// every system, and the usual one in Go programs on windows too), with
// the system's own separator, or with none. On windows the old sweep
// joined the listed names with "\", so that a lock named with "/" matched
// none of its own leftovers, and they stayed for good.
func TestSweepAsPathIsSpelled(t *testing.T) {
	sep := string(filepath.Separator)
	for _, path := range []string{"/tmp/app.lock", sep + "tmp" + sep + "native.lock", "rel.lock"} {
		t.Run(path, func(t *testing.T) {
			w := fake.New()
			dead, p := w.Spawn(), w.Spawn()
			leftover := lockrec.Sidecar(path, fmt.Sprintf("%s-%d-%s", lockrec.TempSuffix, dead.PID(), "AAAAAAAAAAAAAAAAAAAAAAAAAA"))
			stamp := lockrec.Record{Format: lockrec.Format, Identity: dead.Identity(), AcquiredAt: w.Now(), Nonce: "n"}.Marshal()
			if err := w.WriteFile(leftover, stamp, 0o644); err != nil {
				t.Fatal(err)
			}
			dead.Kill()
			here := p.Identity()
			lockrec.Sweep(p.Platform(), &here, path)
			if _, err := w.FS().Lstat(leftover); err == nil {
				t.Errorf("%s: a dead writer's temporary file, still there after a sweep", leftover)
			}
		})
	}
}
