package cli

import (
	"os/exec"
	"path/filepath"
	"testing"
)

// BenchmarkRunTrue: a whole `proclock run PATH -- true`, start to exit,
// on each mechanism: on linux it includes starting COMMAND's guard
// (guard_linux.go). Beside it, in the same run, `flock PATH true`
// (util-linux flock(1)), the cost its users know. PROCLOCK_TEST_BINARY=OLD
// gives another build's figure beside it (docs/command.md, "The lock and
// COMMAND's processes").
func BenchmarkRunTrue(b *testing.B) {
	for _, mech := range mechanisms {
		b.Run(mech, func(b *testing.B) {
			lock := filepath.Join(b.TempDir(), "x.lock")
			args := []string{"run", "--mechanism", mech, lock, "--", "true"}
			for b.Loop() {
				cmd := proclockCmd(args)
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("proclock %q: %v: %s", args, err, out)
				}
			}
		})
	}
	b.Run("flock", func(b *testing.B) {
		flock, err := exec.LookPath("flock")
		if err != nil {
			b.Skip("no flock(1) here to compare with:", err)
		}
		lock := filepath.Join(b.TempDir(), "x.lock")
		for b.Loop() {
			if out, err := exec.Command(flock, lock, "true").CombinedOutput(); err != nil {
				b.Fatalf("flock: %v: %s", err, out)
			}
		}
	})
}
