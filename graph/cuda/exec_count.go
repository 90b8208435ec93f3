package cuda

import (
	"unsafe"

	"gorgonia.org/tensor"
)

// ExecCounters counts what an executor asked of its backend since it was
// built: kernel launches, matrix products, waits for the device (Sync) and
// copies each way. Every device-to-host copy waits for the device's queued
// work too, so Syncs + CopiesDtoH bounds the times a step waits.
type ExecCounters struct {
	Launches   int64 `json:"launches"`    // Backend.Launch calls that launched a kernel (n > 0)
	Gemms      int64 `json:"gemms"`       // Backend.Gemm calls
	Syncs      int64 `json:"syncs"`       // Backend.Sync calls
	CopiesDtoH int64 `json:"copies_dtoh"` // Backend.CopyDtoH calls
	CopiesHtoD int64 `json:"copies_htod"` // Backend.CopyHtoD calls
	// GraphLaunches counts the replays of a captured step
	// (ExecOptions.GraphCapture). The launches and products recorded by
	// a capture count once, in Launches and Gemms, when recorded; a
	// replay adds only here.
	GraphLaunches int64 `json:"graph_launches,omitempty"`
}

// Sub returns c − d, field by field: the counts of the work done between
// two readings.
func (c ExecCounters) Sub(d ExecCounters) ExecCounters {
	return ExecCounters{
		Launches: c.Launches - d.Launches, Gemms: c.Gemms - d.Gemms, Syncs: c.Syncs - d.Syncs,
		CopiesDtoH: c.CopiesDtoH - d.CopiesDtoH, CopiesHtoD: c.CopiesHtoD - d.CopiesHtoD,
		GraphLaunches: c.GraphLaunches - d.GraphLaunches,
	}
}

// Counters returns what the executor has asked of the device so far.
func (x *Exec) Counters() ExecCounters { return x.cnt.c }

// countingBackend is a Backend that counts the calls ExecCounters reports.
type countingBackend struct {
	Backend
	c ExecCounters
}

func (b *countingBackend) Launch(name string, n int64, args ...any) error {
	if n > 0 {
		b.c.Launches++
	}
	return b.Backend.Launch(name, n, args...)
}

func (b *countingBackend) Gemm(dt tensor.Dtype, transA, transB bool, m, n, k int, alpha float64,
	a Ptr, lda int, sA int64, bp Ptr, ldb int, sB int64,
	beta float64, c Ptr, ldc int, sC int64, batch int) error {
	b.c.Gemms++
	return b.Backend.Gemm(dt, transA, transB, m, n, k, alpha, a, lda, sA, bp, ldb, sB, beta, c, ldc, sC, batch)
}

func (b *countingBackend) Sync() error {
	b.c.Syncs++
	return b.Backend.Sync()
}

func (b *countingBackend) CopyDtoH(dst unsafe.Pointer, src Ptr, bytes int64) error {
	b.c.CopiesDtoH++
	return b.Backend.CopyDtoH(dst, src, bytes)
}

func (b *countingBackend) CopyHtoD(dst Ptr, src unsafe.Pointer, bytes int64) error {
	b.c.CopiesHtoD++
	return b.Backend.CopyHtoD(dst, src, bytes)
}
