//go:build darwin

package checkpoint

import (
	"errors"

	"golang.org/x/sys/unix"
)

// exchange swaps the directories a and b atomically with
// renamex_np(RENAME_SWAP). ok is false when the file system does not
// support it (nothing was changed then).
func exchange(a, b string) (ok bool, err error) {
	err = unix.RenamexNp(a, b, unix.RENAME_SWAP)
	if errors.Is(err, unix.ENOTSUP) || errors.Is(err, unix.EINVAL) {
		return false, nil
	}
	return true, err
}
