//go:build unix

package bench

import (
	"syscall"
	"time"
)

// CPUTime returns the CPU time (user + system) the process has used, all
// threads together, from getrusage(RUSAGE_SELF); 0 if it fails.
func CPUTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
