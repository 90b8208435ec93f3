//go:build linux && amd64 && !purego

package gemm

import (
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"syscall"
	"testing"
	"unsafe"
)

// guarded returns n elements that end (atEnd) or start exactly at an
// inaccessible page: a routine that reads or writes one element past
// either end faults.
func guarded[F Float](t *testing.T, n int, atEnd bool) []F {
	t.Helper()
	var z F
	size, pg := int(unsafe.Sizeof(z)), os.Getpagesize()
	pages := (max(n, 1)*size + pg - 1) / pg
	mem, err := syscall.Mmap(-1, 0, (pages+2)*pg, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Munmap(mem) })
	if err := syscall.Mprotect(mem[:pg], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mprotect(mem[(pages+1)*pg:], syscall.PROT_NONE); err != nil {
		t.Fatal(err)
	}
	start := pg
	if atEnd {
		start = (pages+1)*pg - n*size
	}
	return unsafe.Slice((*F)(unsafe.Pointer(&mem[start])), n)
}

// bitsOf is an element's bit pattern.
func bitsOf[F Float](v F) uint64 {
	switch v := any(v).(type) {
	case float32:
		return uint64(math.Float32bits(v))
	case float64:
		return math.Float64bits(v)
	}
	panic("unreachable")
}

// fillPack fills s with values whose bits must survive the move: normal
// numbers, negative zeros, infinities and NaNs with payloads.
func fillPack[F Float](s []F, rng *rand.Rand) {
	for i := range s {
		switch rng.IntN(16) {
		case 0:
			s[i] = F(math.Copysign(0, -1))
		case 1:
			s[i] = F(math.Inf(-1))
		case 2:
			var v F
			if _, ok := any(v).(float32); ok {
				s[i] = any(math.Float32frombits(0x7fc00000 | uint32(rng.IntN(1<<22)))).(F)
			} else {
				s[i] = any(math.Float64frombits(0xfff8000000000000 | uint64(rng.IntN(1<<40)))).(F)
			}
		default:
			s[i] = F(rng.NormFloat64())
		}
	}
}

// checkPacked compares the routine's output (in a guarded buffer, after
// starting from garbage) with the portable routine's, bit for bit.
func checkPacked[F Float](t *testing.T, name string, got, want []F) {
	t.Helper()
	for i := range want {
		if bitsOf(got[i]) != bitsOf(want[i]) {
			t.Fatalf("%s: element %d of %d: %v, want %v", name, i, len(want), got[i], want[i])
		}
	}
}

// packCase runs one routine on a source and a destination that each sit
// at the end of their mapping, then at its start, against the portable
// routine on ordinary slices.
func packCase[F Float](t *testing.T, rng *rand.Rand, name string, nsrc, ndst int, asm, ref func(dst, src []F)) {
	t.Helper()
	src := make([]F, nsrc)
	fillPack(src, rng)
	want := make([]F, ndst)
	for i := range want {
		want[i] = 7
	}
	ref(want, src)
	for _, atEnd := range []bool{true, false} {
		gs := guarded[F](t, nsrc, atEnd)
		copy(gs, src)
		gd := guarded[F](t, ndst, atEnd)
		fillPack(gd, rng) // garbage: every element must be written
		asm(gd, gs)
		checkPacked(t, fmt.Sprintf("%s atEnd=%v", name, atEnd), gd, want)
		for i := range src {
			if bitsOf(gs[i]) != bitsOf(src[i]) {
				t.Fatalf("%s: source element %d changed", name, i)
			}
		}
	}
}

func testPackRoutines[F Float](t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	kbs := []int{1, 2, 7, 15, 16, 17, 31, 32, 33, 100, 256}
	for _, width := range []int{1, 3, 4, 6, 8, 9, 12, 16, 17, 24, 32} {
		for i, h := range []int{1, 2, width / 2, width - 1, width} {
			if h < 1 || h > width || (i > 0 && h <= []int{1, 2, width / 2, width - 1}[i-1]) {
				continue // out of range, or tried already
			}
			for _, kb := range kbs {
				for _, ld := range []int{kb, kb + 3, 517} {
					off := rng.IntN(5)
					name := fmt.Sprintf("gatherRows width %d h %d kb %d ld %d off %d", width, h, kb, ld, off)
					packCase(t, rng, name, off+(h-1)*ld+kb, kb*width,
						func(d, s []F) { gatherRows(d, s, off, ld, h, kb, width) },
						func(d, s []F) { gatherRowsGo(d, s, off, ld, h, kb, width) })
				}
			}
		}
	}
	for _, mr := range []int{1, 4, 6, 8, 9, 12, 16, 20, 32} {
		for _, cols := range []int{1, mr - 1, mr, mr + 1, 5*mr + 3, 16 * mr} {
			if cols < 1 {
				continue
			}
			for _, kb := range kbs {
				for _, lda := range []int{cols, cols + 7} {
					name := fmt.Sprintf("packCols mr %d cols %d kb %d lda %d", mr, cols, kb, lda)
					panels := (cols + mr - 1) / mr
					packCase(t, rng, name, (kb-1)*lda+cols, panels*mr*kb,
						func(d, s []F) { packCols(d, s, lda, cols, kb, mr) },
						func(d, s []F) { packColsGo(d, s, lda, cols, kb, mr) })
				}
			}
		}
	}
}

// TestPackAsm compares the AVX-512 packing routines with the portable ones
// bit for bit, over widths, heights, depths (below, at and past a multiple
// of the vector length), strides and offsets, with every source and
// destination at the edge of an inaccessible page.
func TestPackAsm(t *testing.T) {
	if !packAsm {
		t.Skip("this CPU has no AVX-512: the packing runs in Go")
	}
	t.Run("float32", testPackRoutines[float32])
	t.Run("float64", testPackRoutines[float64])
}

// BenchmarkPack times packA and packB on the paper preset's products
// (kernels_amd64.go's float32 AVX-512 and AVX2 blockings), in assembly
// and in Go: ns per packed element. One core:
//
//	GOMAXPROCS=1 go test ./gemm -run '^$' -bench Pack -benchtime 3x
func BenchmarkPack(b *testing.B) {
	b.Run("avx512", func(b *testing.B) { benchPack(b, &avx512.f32) })
	b.Run("avx2", func(b *testing.B) { benchPack(b, &avx2.f32) })
}

func benchPack(b *testing.B, bl *blocking[float32]) {
	const v, d, n = 50258, 512, 1024
	rng := rand.New(rand.NewPCG(1, 2))
	big := randSlice[float32](n*v, rng) // dY (n×v) or W (v×d)
	small := randSlice[float32](n*d, rng)
	buf := &buffers[float32]{a: make([]float32, bl.mc*bl.kc), b: make([]float32, bl.kc*bl.nc)}
	cases := []struct {
		name  string
		elems int
		run   func()
	}{
		// dh = dY·W: A = dY, 1024×50258, panels gathered from its rows.
		{"dh-A", n * v, func() {
			for pc := 0; pc < v; pc += bl.kc {
				packA(buf.a, false, big, v, 0, pc, n, min(bl.kc, v-pc), bl.mr, 1)
			}
		}},
		// dh = dY·W: B = W, 50258×512, slivers copied from its rows.
		{"dh-B", v * d, func() {
			for pc := 0; pc < v; pc += bl.kc {
				packB(buf.b, false, big, d, pc, 0, min(bl.kc, v-pc), d, bl.nr)
			}
		}},
		// logits = h·Wᵀ: B = Wᵀ, slivers gathered from W's rows.
		{"logits-B", v * d, func() {
			for pc := 0; pc < d; pc += bl.kc {
				for jc := 0; jc < v; jc += bl.nc {
					packB(buf.b, true, big, d, pc, jc, bl.kc, min(bl.nc, v-jc), bl.nr)
				}
			}
		}},
		// dW = dYᵀ·h: A = dYᵀ (columns of dY), B = h (rows).
		{"dW-A", n * v, func() {
			for ic := 0; ic < v; ic += bl.mc {
				for pc := 0; pc < n; pc += bl.kc {
					packA(buf.a, true, big, v, ic, pc, min(bl.mc, v-ic), bl.kc, bl.mr, 1)
				}
			}
		}},
		{"dW-B", n * d, func() {
			for pc := 0; pc < n; pc += bl.kc {
				packB(buf.b, false, small, d, pc, 0, bl.kc, d, bl.nr)
			}
		}},
	}
	for _, c := range cases {
		for _, asm := range []bool{true, false} {
			name := c.name + "/go"
			if asm {
				name = c.name + "/asm"
			}
			b.Run(name, func(b *testing.B) {
				if asm && !packAsm {
					b.Skip("no AVX-512")
				}
				defer func(old bool) { packAsm = old }(packAsm)
				packAsm = asm
				cpu0 := cpuTime()
				for i := 0; i < b.N; i++ {
					c.run()
				}
				if cpu := cpuTime() - cpu0; cpu > 0 {
					b.ReportMetric(float64(cpu.Nanoseconds())/float64(b.N)/float64(c.elems), "cpu-ns/elem")
				}
			})
		}
	}
}
