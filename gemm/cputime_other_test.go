//go:build !unix

package gemm

import "time"

// cpuTime is 0 where getrusage is missing: the benchmarks then report no
// CPU-time rate.
func cpuTime() time.Duration { return 0 }
