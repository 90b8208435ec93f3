//go:build linux

package checkpoint

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the directories a and b atomically with
// renameat2(RENAME_EXCHANGE). ok is false when the file system or kernel
// does not support it (nothing was changed then).
func exchange(a, b string) (ok bool, err error) {
	err = unix.Renameat2(unix.AT_FDCWD, a, unix.AT_FDCWD, b, unix.RENAME_EXCHANGE)
	if errors.Is(err, unix.ENOSYS) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOTSUP) {
		return false, nil
	}
	return true, err
}
