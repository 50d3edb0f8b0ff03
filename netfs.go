package proclock

import (
	"fmt"

	"github.com/proclock/proclock/lockfs"
)

// refuseNetworkFS fails with ErrNetworkFS when fsys says t's directory is
// on a network filesystem. An FS that cannot tell, or fails to, is let
// through: the check must not lock anyone out.
func (t *lockTarget) refuseNetworkFS(fsys lockfs.FS) error {
	n, ok := fsys.(lockfs.NetworkFS)
	if !ok {
		return nil
	}
	if kind, err := n.NetworkFS(t.dir); err == nil && kind != "" {
		return &networkFSError{kind: kind}
	}
	return nil
}

// networkFSError is the cause of a refusal to lock on a network
// filesystem; it matches ErrNetworkFS.
type networkFSError struct{ kind string }

func (e *networkFSError) Error() string {
	return fmt.Sprintf("on a network filesystem (%s), where locks are not reliable (Options.AllowNetworkFS locks there anyway)", e.kind)
}

func (e *networkFSError) Is(target error) bool { return target == ErrNetworkFS }
