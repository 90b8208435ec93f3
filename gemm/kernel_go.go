package gemm

import "unsafe"

// portable is the pure-Go instruction set: a 4×8 tile.
var portable = &kernels{
	name: "go",
	f32:  blocking[float32]{mr: 4, nr: 8, kc: 256, mc: 128, nc: 512, kern: goKernel[float32], rows: goRows[float32]},
	f64:  blocking[float64]{mr: 4, nr: 8, kc: 256, mc: 128, nc: 256, kern: goKernel[float64], rows: goRows[float64]},
}

// active is the instruction set Gemm runs on: the best available.
var active = available()[0]

// goKernel is the portable micro-kernel of a 4×8 tile (see gen_kernels.go
// for the modes). Without fused multiply-adds its roundings differ from
// the assembly kernels'.
func goKernel[F Float](k int, a, b, c *F, ldc, mode int) {
	const mr, nr = 4, 8
	as := unsafe.Slice(a, k*mr)
	bs := unsafe.Slice(b, k*nr)
	cs := unsafe.Slice(c, (mr-1)*ldc+nr)
	var acc [mr][nr]F
	if mode == modeChain {
		for i := range acc {
			copy(acc[i][:], cs[i*ldc:i*ldc+nr])
		}
	}
	for l := 0; l < k; l++ {
		bl := (*[nr]F)(bs[l*nr : l*nr+nr])
		al := (*[mr]F)(as[l*mr : l*mr+mr])
		for i := range acc {
			ai := al[i]
			r := &acc[i]
			for j := range r {
				r[j] += ai * bl[j]
			}
		}
	}
	for i := range acc {
		row := cs[i*ldc : i*ldc+nr]
		if mode == modeAdd {
			for j := range row {
				row[j] += acc[i][j]
			}
			continue
		}
		copy(row, acc[i][:])
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
