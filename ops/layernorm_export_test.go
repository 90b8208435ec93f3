package ops

// CPUTime exports cpuTime to the external tests (BenchmarkLayerNorm's
// cpu-ms/op).
var CPUTime = cpuTime
