//go:build amd64 && !purego

package ops

import "golang.org/x/sys/cpu"

// haveLabelSums32 reports whether labelSums32 may run (AVX).
var haveLabelSums32 = cpu.X86.HasAVX

// labelMask32 holds eight all-ones lanes, then eight zero lanes: the mask of
// the first n lanes is the eight words from index 8 − n.
//
//lint:ignore U1000 read by labelsums_amd64.s
var labelMask32 = [16]int32{-1, -1, -1, -1, -1, -1, -1, -1}

// labelSums32 adds row r of src (rows of dp ≤ 8 floats, one after another)
// into row lab[r] of rows (rows of 8 floats) for r < n (n ≥ 0), in order:
// each lane of an accumulator row the additions of the Go loop, in the
// same order, one vector addition a row (masked loads: nothing read past
// src's n rows). Every lab[r] must index a row of rows.
//
//go:noescape
func labelSums32(rows, src *float32, lab *int32, n, dp int)
