//go:build unix

package gemm

import (
	"syscall"
	"time"
)

// cpuTime returns the process CPU time (user + system) so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
