package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// sameBits reports whether two elements have the same bit pattern.
func sameBits[F Float](a, b F) bool {
	switch a := any(a).(type) {
	case float32:
		return math.Float32bits(a) == math.Float32bits(any(b).(float32))
	case float64:
		return math.Float64bits(a) == math.Float64bits(any(b).(float64))
	}
	return false
}

// packValues fills s with normal numbers, negative zeros and NaNs with
// payloads: a move must keep every bit.
func packValues[F Float](s []F, rng *rand.Rand) {
	for i := range s {
		switch rng.IntN(8) {
		case 0:
			s[i] = F(math.Copysign(0, -1))
		case 1:
			var z F
			if _, ok := any(z).(float32); ok {
				s[i] = any(math.Float32frombits(0x7fc00000 | uint32(rng.IntN(1<<22)))).(F)
			} else {
				s[i] = any(math.Float64frombits(0xfff8000000000000 | uint64(rng.IntN(1<<40)))).(F)
			}
		default:
			s[i] = F(rng.NormFloat64())
		}
	}
}

// testPackGo checks the portable packing routines (with their unrolled
// paths) against their definitions, element by element, starting from
// garbage in the destination.
func testPackGo[F Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, width := range []int{1, 3, 4, 5, 6, 8, 12, 16} {
		for _, h := range []int{1, width - 1, width} {
			if h < 1 {
				continue
			}
			for _, kb := range []int{1, 7, 64, 256} {
				for _, ld := range []int{kb, kb + 5} {
					off := rng.IntN(4)
					src := make([]F, off+(h-1)*ld+kb)
					packValues(src, rng)
					dst := make([]F, kb*width+3)
					packValues(dst, rng)
					tail := append([]F(nil), dst[kb*width:]...)
					gatherRowsGo(dst, src, off, ld, h, kb, width)
					for l := 0; l < kb; l++ {
						for r := 0; r < width; r++ {
							want := F(0)
							if r < h {
								want = src[off+r*ld+l]
							}
							if got := dst[l*width+r]; !sameBits(got, want) {
								t.Fatalf("gatherRowsGo width %d h %d kb %d ld %d: (%d, %d) = %v, want %v", width, h, kb, ld, l, r, got, want)
							}
						}
					}
					for i, v := range tail {
						if !sameBits(dst[kb*width+i], v) {
							t.Fatalf("gatherRowsGo width %d h %d kb %d: wrote past the panel", width, h, kb)
						}
					}
				}
			}
		}
	}
	for _, mr := range []int{1, 4, 5, 6, 8, 16} {
		for _, cols := range []int{1, mr - 1, mr, 3*mr + 2, 7 * mr} {
			if cols < 1 {
				continue
			}
			for _, kb := range []int{1, 7, 13, 64} { // 13: blocks of eight lines and a rest
				for _, lda := range []int{cols, cols + 3} {
					name := fmt.Sprintf("packColsGo mr %d cols %d kb %d lda %d", mr, cols, kb, lda)
					src := make([]F, (kb-1)*lda+cols)
					packValues(src, rng)
					panels := (cols + mr - 1) / mr
					dst := make([]F, panels*mr*kb+3)
					packValues(dst, rng)
					tail := append([]F(nil), dst[panels*mr*kb:]...)
					packColsGo(dst, src, lda, cols, kb, mr)
					for q := 0; q < panels; q++ {
						for l := 0; l < kb; l++ {
							for i := 0; i < mr; i++ {
								want := F(0)
								if q*mr+i < cols {
									want = src[l*lda+q*mr+i]
								}
								if got := dst[q*mr*kb+l*mr+i]; !sameBits(got, want) {
									t.Fatalf("%s: panel %d (%d, %d) = %v, want %v", name, q, l, i, got, want)
								}
							}
						}
					}
					for i, v := range tail {
						if !sameBits(dst[panels*mr*kb+i], v) {
							t.Fatalf("%s: wrote past the panels", name)
						}
					}
				}
			}
		}
	}
}

// TestPackGo checks the portable packing routines, which run wherever the
// AVX-512 assembly does not (AVX2 CPUs, other architectures, purego).
func TestPackGo(t *testing.T) {
	t.Run("float32", testPackGo[float32])
	t.Run("float64", testPackGo[float64])
}
