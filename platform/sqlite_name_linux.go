//go:build linux && !sqlite3_dotlk

package platform

import (
	"fmt"
	"os"
	"strconv"

	"github.com/proclock/proclock/internal/sqlapi"
	"golang.org/x/sys/unix"
)

// shortSQLiteName names base in dir by way of a descriptor of dir,
// "/proc/self/fd/N/base", checked to lead to dir itself, so that a /proc
// of another pid namespace is never trusted; done closes the descriptor.
func shortSQLiteName(dir, base string) (string, func(), error) {
	fd, err := unix.Open(dir, unix.O_PATH|unix.O_DIRECTORY|unix.O_CLOEXEC, 0)
	if err != nil {
		return "", nil, &os.PathError{Op: "open", Path: dir, Err: err}
	}
	done := func() { unix.Close(fd) }
	via := "/proc/self/fd/" + strconv.Itoa(fd)
	var opened, named unix.Stat_t
	if unix.Fstat(fd, &opened) != nil || unix.Stat(via, &named) != nil || opened.Dev != named.Dev || opened.Ino != named.Ino {
		done()
		return "", nil, fmt.Errorf("%w (and /proc/self/fd cannot name its directory)", sqlapi.ErrSQLitePathTooLong)
	}
	name := via + "/" + base
	if len(name) > sqlapi.MaxSQLitePath {
		done()
		return "", nil, sqlapi.ErrSQLitePathTooLong
	}
	return name, done, nil
}
