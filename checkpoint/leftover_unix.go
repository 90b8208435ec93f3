//go:build unix && !linux

package checkpoint

import (
	"errors"
	"syscall"
)

// pidFree reports whether no process has id pid.
func pidFree(pid int) bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) }
