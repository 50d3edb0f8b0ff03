package proclock

import (
	"fmt"

	"github.com/proclock/proclock/lockfs"
)

// refuseNetworkFS fails with ErrNetworkFS when fsys says dir is on a network
// filesystem. An FS that cannot tell, or fails to, is let through: the
// check protects against a known hazard and must not lock anyone out.
func refuseNetworkFS(fsys lockfs.FS, dir string) error {
	n, ok := fsys.(lockfs.NetworkFS)
	if !ok {
		return nil
	}
	kind, err := n.NetworkFS(dir)
	if err != nil || kind == "" {
		return nil
	}
	return fmt.Errorf("%w: %s is on %s (set Options.AllowNetworkFS to lock there anyway)", ErrNetworkFS, dir, kind)
}
