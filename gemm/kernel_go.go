package gemm

import "unsafe"

// portable is the pure-Go instruction set: a 4×4 tile.
var portable = &kernels{
	name: "go",
	f32:  blocking[float32]{mr: 4, nr: 4, kc: 256, mc: 1024, nc: 512, kern: goKernel[float32], rows: goRows[float32]},
	f64:  blocking[float64]{mr: 4, nr: 4, kc: 256, mc: 1024, nc: 256, kern: goKernel[float64], rows: goRows[float64]},
}

// active is the instruction set Gemm runs on: the best available.
var active = available()[0]

// goKernel is the portable micro-kernel of a 4×4 tile (see gen_kernels.go
// for the modes; it prefetches nothing), its sixteen sums in local variables. Without fused
// multiply-adds its roundings differ from the assembly kernels'.
func goKernel[F Float](k int, a, b, c *F, ldc, mode int, _ *F) {
	const mr, nr = 4, 4
	as := unsafe.Slice(a, k*mr)
	bs := unsafe.Slice(b, k*nr)
	cs := unsafe.Slice(c, (mr-1)*ldc+nr)
	var c00, c01, c02, c03, c10, c11, c12, c13, c20, c21, c22, c23, c30, c31, c32, c33 F
	if mode == modeChain {
		r0, r1, r2, r3 := cs[0:4], cs[ldc:ldc+4], cs[2*ldc:2*ldc+4], cs[3*ldc:3*ldc+4]
		c00, c01, c02, c03 = r0[0], r0[1], r0[2], r0[3]
		c10, c11, c12, c13 = r1[0], r1[1], r1[2], r1[3]
		c20, c21, c22, c23 = r2[0], r2[1], r2[2], r2[3]
		c30, c31, c32, c33 = r3[0], r3[1], r3[2], r3[3]
	}
	for l := 0; l < k; l++ {
		al := (*[mr]F)(as[l*mr : l*mr+mr])
		bl := (*[nr]F)(bs[l*nr : l*nr+nr])
		b0, b1, b2, b3 := bl[0], bl[1], bl[2], bl[3]
		a0 := al[0]
		c00 += a0 * b0
		c01 += a0 * b1
		c02 += a0 * b2
		c03 += a0 * b3
		a1 := al[1]
		c10 += a1 * b0
		c11 += a1 * b1
		c12 += a1 * b2
		c13 += a1 * b3
		a2 := al[2]
		c20 += a2 * b0
		c21 += a2 * b1
		c22 += a2 * b2
		c23 += a2 * b3
		a3 := al[3]
		c30 += a3 * b0
		c31 += a3 * b1
		c32 += a3 * b2
		c33 += a3 * b3
	}
	sums := [mr][nr]F{{c00, c01, c02, c03}, {c10, c11, c12, c13}, {c20, c21, c22, c23}, {c30, c31, c32, c33}}
	for i := range sums {
		row := cs[i*ldc : i*ldc+nr]
		if mode == modeAdd {
			for j := range row {
				row[j] += sums[i][j]
			}
			continue
		}
		copy(row, sums[i][:])
	}
}

// goRows is the portable row kernel (see blocking.rows).
func goRows[F Float](c, a, b *F, inca, ldb, k, n int, acc bool) {
	cs := unsafe.Slice(c, n)
	if !acc {
		clear(cs)
	}
	if k == 0 {
		return
	}
	as := unsafe.Slice(a, (k-1)*inca+1)
	bs := unsafe.Slice(b, (k-1)*ldb+n)
	// Sums from zero, added to C at the end, as the assembly kernels do.
	var tmp [64]F
	for j0 := 0; j0 < n; j0 += len(tmp) {
		w := min(len(tmp), n-j0)
		t := tmp[:w]
		clear(t)
		for l := 0; l < k; l++ {
			al := as[l*inca]
			br := bs[l*ldb+j0 : l*ldb+j0+w]
			for j, v := range br {
				t[j] += al * v
			}
		}
		for j, v := range t {
			cs[j0+j] += v
		}
	}
}
