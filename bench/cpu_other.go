//go:build !unix

package bench

import "time"

// CPUTime returns 0: process CPU time is read with getrusage, on Unix only.
func CPUTime() time.Duration { return 0 }
