package gemm

import (
	"sync"
	"unsafe"
)

// minParallelFlops is the smallest product (2·m·n·k) worth splitting over
// goroutines: below it, starting them costs more than the split saves. (A
// variable for the tests.)
var minParallelFlops = float64(4 << 20)

// blocking is one instruction set's micro-kernel for one dtype, with the
// sizes of its tile (MR×NR) and of the packed blocks (KC deep; A in MC
// rows, B in NC columns).
type blocking[F Float] struct {
	mr, nr, kc, mc, nc int
	// kcStore, where not 0, is KC for products with beta 0: their chains
	// run unbroken across KC slices, so the depth of a slice changes no
	// bit, and deeper slices store C fewer times (with beta 1 the slice
	// boundary is where C joins the sum, so those keep kc).
	kcStore int
	// kern computes one MR×NR tile and prefetches the next: see
	// gen_kernels.go for the modes.
	kern func(k int, a, b, c *F, ldc, mode int, next *F)
	// kernA, where not nil, is kern with a full micro-panel of a
	// non-transposed A read where it is stored (rows lda apart) instead of
	// packed: the same chains, the same bits, without the packing.
	kernA func(k int, a *F, lda int, b, c *F, ldc, mode int, next *F)
	// rows sets (acc false) or increments (acc true) c[j], j < n, by
	// Σ_{l<k} a[l·inca]·b[l·ldb+j], in order, with fused multiply-adds.
	rows func(c, a, b *F, inca, ldb, k, n int, acc bool)
}

// Tile modes of a micro-kernel call.
const (
	modeStore = 0 // C = Σ
	modeAdd   = 1 // C += Σ (Σ from zero)
	modeChain = 2 // the chains continue from C
)

// kernels is an instruction set: the float32 and float64 blockings.
type kernels struct {
	name string
	f32  blocking[float32]
	f64  blocking[float64]
}

func pick[F Float](ks *kernels) *blocking[F] {
	var z F
	if _, ok := any(z).(float32); ok {
		return any(&ks.f32).(*blocking[F])
	}
	return any(&ks.f64).(*blocking[F])
}

// Name reports the instruction set the micro-kernels run on: "avx512",
// "avx2" or "go" (the portable kernel).
func Name() string { return active.name }

// useRows reports whether a product is small or narrow enough for the row
// kernels: packing would cost more than it saves, or pad a thin tile.
func useRows(mr, nr, m, n, k int) bool {
	return m < mr/2 || n <= nr/2 || float64(m)*float64(n)*float64(k) <= 1<<15
}

// gemm runs a checked product on ks with up to threads goroutines.
func gemm[F Float](ks *kernels, threads int, tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, beta F, c []F, ldc int) {
	if m == 0 || n == 0 {
		return
	}
	if k == 0 || alpha == 0 {
		scale(m, n, beta, c, ldc)
		return
	}
	bl := pick[F](ks)
	if beta != 0 && beta != 1 {
		scale(m, n, beta, c, ldc)
	}
	first := firstMode(beta) // assigned once: the goroutines below copy it (no allocation)
	if alpha == 1 && useRows(bl.mr, bl.nr, m, n, k) {
		rowsProduct(bl, tA, tB, m, n, k, a, lda, b, ldb, first == modeAdd, c, ldc)
		return
	}
	work := 2 * float64(m) * float64(n) * float64(k)
	parts := 1
	if threads > 1 && work >= 2*minParallelFlops {
		parts = min(threads, int(work/minParallelFlops))
	}
	// Split the rows of C when B is the smaller operand to pack twice, the
	// columns otherwise; in whole tiles.
	byRows := n <= m
	unit, size := bl.mr, m
	if !byRows {
		unit, size = bl.nr, n
	}
	tiles := (size + unit - 1) / unit
	parts = min(parts, tiles)
	if parts <= 1 {
		packed(bl, tA, tB, m, n, k, alpha, a, lda, b, ldb, first, c, ldc)
		return
	}
	var wg sync.WaitGroup
	for p := 0; p < parts; p++ {
		lo, hi := p*tiles/parts*unit, min(size, (p+1)*tiles/parts*unit)
		wg.Add(1)
		go func() {
			defer wg.Done()
			if byRows {
				ap := a[lo:] // columns lo.. of the stored k×m A
				if !tA {
					ap = a[lo*lda:]
				}
				packed(bl, tA, tB, hi-lo, n, k, alpha, ap, lda, b, ldb, first, c[lo*ldc:], ldc)
			} else {
				bp := b[lo:] // columns lo.. of the stored k×n B
				if tB {
					bp = b[lo*ldb:]
				}
				packed(bl, tA, tB, m, hi-lo, k, alpha, a, lda, bp, ldb, first, c[lo:], ldc)
			}
		}()
	}
	wg.Wait()
}

// firstMode is the tile mode of the first KC slice: beta 0 stores, any
// other beta (applied to C beforehand) adds.
func firstMode[F Float](beta F) int {
	if beta == 0 {
		return modeStore
	}
	return modeAdd
}

// scale sets C = beta·C (zeros for beta 0, whatever C held).
func scale[F Float](m, n int, beta F, c []F, ldc int) {
	if beta == 1 {
		return
	}
	for i := 0; i < m; i++ {
		row := c[i*ldc : i*ldc+n]
		if beta == 0 {
			clear(row)
			continue
		}
		for j := range row {
			row[j] *= beta
		}
	}
}

// buffers holds a goroutine's packed blocks and edge tile.
type buffers[F Float] struct{ a, b, tile []F }

// pools hold *buffers[float32] (index 0) and *buffers[float64] (1);
// scratchPools the row path's copies of Bᵀ (*[]float32, *[]float64), so
// that a batch of small products allocates nothing per product.
var pools, scratchPools [2]sync.Pool

func getBuffers[F Float](bl *blocking[F]) *buffers[F] {
	var z F
	pool := &pools[unsafe.Sizeof(z)/8]
	kc := max(bl.kc, bl.kcStore)
	if v, ok := pool.Get().(*buffers[F]); ok && len(v.a) == bl.mc*kc && len(v.b) == kc*bl.nc && len(v.tile) == bl.mr*bl.nr {
		return v
	}
	return &buffers[F]{a: make([]F, bl.mc*kc), b: make([]F, kc*bl.nc), tile: make([]F, bl.mr*bl.nr)}
}

func putBuffers[F Float](buf *buffers[F]) {
	var z F
	pools[unsafe.Sizeof(z)/8].Put(buf)
}

// packed is the five-loop packed product on one goroutine; first is the
// mode of the first KC slice (modeStore for beta 0, modeAdd otherwise).
func packed[F Float](bl *blocking[F], tA, tB bool, m, n, k int, alpha F, a []F, lda int, b []F, ldb int, first int, c []F, ldc int) {
	buf := getBuffers(bl)
	defer putBuffers(buf)
	mr, nr, kc := bl.mr, bl.nr, bl.kc
	if first == modeStore && bl.kcStore > 0 {
		kc = bl.kcStore
	}
	// Where A's block meets a single block of B (n ≤ NC), packing it would
	// be a pass over A as long as the product's own reads: its full
	// micro-panels are read in place instead, where the kernel can, and
	// only a partial last panel is packed. (A block that meets several
	// blocks of B is packed: the packed panels run faster.)
	direct := bl.kernA != nil && !tA && alpha == 1 && n <= bl.nc
	// BLIS's order, rows and columns exchanged: A's block (MC rows, for
	// the L3 cache) is packed once per KC slice, B's (NC columns, L2) once
	// per KC slice and MC block; a micro-panel of A (L1) meets every sliver
	// of B's block in turn.
	for ic := 0; ic < m; ic += bl.mc {
		mb := min(bl.mc, m-ic)
		for pc := 0; pc < k; pc += kc {
			kb := min(kc, k-pc)
			mode := modeChain
			if pc == 0 {
				mode = first
			}
			if !direct {
				packA(buf.a, tA, a, lda, ic, pc, mb, kb, mr, alpha)
			} else if full := mb / mr * mr; full < mb {
				packA(buf.a[full*kb:], tA, a, lda, ic+full, pc, mb-full, kb, mr, alpha)
			}
			for jc := 0; jc < n; jc += bl.nc {
				nb := min(bl.nc, n-jc)
				packB(buf.b, tB, b, ldb, pc, jc, kb, nb, nr)
				for ir := 0; ir < mb; ir += mr {
					h := min(mr, mb-ir)
					ap := &buf.a[ir*kb]
					var ad *F // the panel in place, or nil
					if direct && h == mr {
						ad = &a[(ic+ir)*lda+pc]
					}
					for jr := 0; jr < nb; jr += nr {
						w := min(nr, nb-jr)
						bp := &buf.b[jr*kb]
						co := (ic+ir)*ldc + jc + jr
						next := co // the next tile's corner, for the prefetch
						switch {
						case jr+nr < nb:
							next = co + nr
						case ir+mr < mb:
							next = (ic+ir+mr)*ldc + jc
						}
						if h == mr && w == nr {
							if ad != nil {
								bl.kernA(kb, ad, lda, bp, &c[co], ldc, mode, &c[next])
							} else {
								bl.kern(kb, ap, bp, &c[co], ldc, mode, &c[next])
							}
							continue
						}
						// An edge tile: through a full tile of scratch.
						t := buf.tile
						if mode != modeStore {
							for i := 0; i < h; i++ {
								copy(t[i*nr:i*nr+w], c[co+i*ldc:co+i*ldc+w])
							}
						}
						if ad != nil {
							bl.kernA(kb, ad, lda, bp, &t[0], nr, mode, &c[next])
						} else {
							bl.kern(kb, ap, bp, &t[0], nr, mode, &c[next])
						}
						for i := 0; i < h; i++ {
							copy(c[co+i*ldc:co+i*ldc+w], t[i*nr:i*nr+w])
						}
					}
				}
			}
		}
	}
}

// packA packs rows ic..ic+mb of op(A), inner indices pc..pc+kb, into
// micro-panels of mr rows: panel p holds element (i, l) at p·mr·kb + l·mr +
// i, zero past the last row; scaled by alpha.
func packA[F Float](dst []F, tA bool, a []F, lda, ic, pc, mb, kb, mr int, alpha F) {
	if tA {
		// A is k×m: row l of A holds op(A)'s column l. Groups of panels
		// read a stretch of each row at once (prefetch-friendly) and
		// write their panels, which stay in the L2 cache.
		const group = 16
		for p0 := 0; p0*mr < mb; p0 += group {
			cols := min(group*mr, mb-p0*mr)
			packCols(dst[p0*mr*kb:], a[pc*lda+ic+p0*mr:], lda, cols, kb, mr)
		}
	} else {
		for p := 0; p*mr < mb; p++ {
			h := min(mr, mb-p*mr)
			gatherRows(dst[p*mr*kb:(p+1)*mr*kb], a, (ic+p*mr)*lda+pc, lda, h, kb, mr)
		}
	}
	if alpha != 1 {
		d := dst[:(mb+mr-1)/mr*mr*kb]
		for i := range d {
			d[i] *= alpha
		}
	}
}

// packB packs columns jc..jc+nb of op(B), inner indices pc..pc+kb, into
// slivers of nr columns: sliver q holds element (l, j) at q·nr·kb + l·nr +
// j, zero past the last column.
func packB[F Float](dst []F, tB bool, b []F, ldb, pc, jc, kb, nb, nr int) {
	if !tB {
		// B is k×n: the slivers are stretches of its rows, copied a whole
		// row of the block at a time (sequential reads, which the
		// prefetchers follow; sliver by sliver, every line of B would
		// wait on memory).
		packCols(dst, b[pc*ldb+jc:], ldb, nb, kb, nr)
		return
	}
	for q := 0; q*nr < nb; q++ {
		w := min(nr, nb-q*nr)
		j0 := jc + q*nr
		// B is n×k: row j of B holds op(B)'s column j.
		gatherRows(dst[q*nr*kb:(q+1)*nr*kb], b, j0*ldb+pc, ldb, w, kb, nr)
	}
}

// The packing routines below are the portable ones; gatherRows and
// packCols (pack_amd64.go, pack_other.go) run them or their AVX-512
// versions (pack_amd64.s), which write the same elements, bit for bit.

// packColsGo packs the micro-panels of mr rows of op(A) = Aᵀ whose columns
// start at src[0] (cols of them, the last panel possibly partial), inner
// indices l < kb (rows of A, lda apart): panel q holds element (i, l) at
// q·mr·kb + l·mr + i, zero past the last column. It reads a stretch of
// cols elements of each row of A at once.
func packColsGo[F Float](dst, src []F, lda, cols, kb, mr int) {
	done := colsFull(dst, src, lda, cols, kb, mr) // the full panels, unrolled
	if done*mr == cols {
		return
	}
	for l := 0; l < kb; l++ {
		s := src[l*lda : l*lda+cols]
		for q := done; q*mr < cols; q++ {
			h := min(mr, cols-q*mr)
			o := q*mr*kb + l*mr
			d := dst[o : o+mr]
			copy(d, s[q*mr:q*mr+h])
			clear(d[h:])
		}
	}
}

// gatherRowsGo writes element l of the rows r < h of src (each of length kb,
// the first at off, ld apart) to dst[l·width + r], zero for r ≥ h: a
// transposing copy that reads its h rows side by side, so that their cache
// misses overlap (row by row, a row far from the last waits on memory
// every 16 elements).
func gatherRowsGo[F Float](dst, src []F, off, ld, h, kb, width int) {
	if gatherFull(dst, src, off, ld, h, kb, width) { // full panels, unrolled
		return
	}
	var rows [maxTile][]F
	for r := 0; r < h; r++ {
		rows[r] = src[off+r*ld : off+r*ld+kb]
	}
	for l := 0; l < kb; l++ {
		dl := dst[l*width : l*width+width]
		for r, row := range rows[:h] {
			dl[r] = row[l]
		}
		clear(dl[h:])
	}
}

// maxTile bounds MR and NR.
const maxTile = 32

// rowsProduct is the product (alpha 1) on the row kernels; acc adds it to C
// (beta 1) instead of overwriting C (beta 0).
func rowsProduct[F Float](bl *blocking[F], tA, tB bool, m, n, k int, a []F, lda int, b []F, ldb int, acc bool, c []F, ldc int) {
	if tB { // the row kernels read rows of op(B): copy Bᵀ, in a pooled buffer
		var z F
		pool := &scratchPools[unsafe.Sizeof(z)/8]
		sp, _ := pool.Get().(*[]F)
		if sp == nil || cap(*sp) < k*n {
			s := make([]F, k*n)
			sp = &s
		}
		defer pool.Put(sp)
		bt := (*sp)[:k*n]
		for j := 0; j < n; j++ {
			for l, v := range b[j*ldb : j*ldb+k] {
				bt[l*n+j] = v
			}
		}
		b, ldb = bt, n
	}
	for i := 0; i < m; i++ {
		if tA {
			bl.rows(&c[i*ldc], &a[i], &b[0], lda, ldb, k, n, acc)
		} else {
			bl.rows(&c[i*ldc], &a[i*lda], &b[0], 1, ldb, k, n, acc)
		}
	}
}

// MulAddRow sets (acc false) or increments (acc true) c[j], j < n, by
// Σ_{l<k} a[l·inca]·b[l·ldb + j]: one row of a product whose left factor's
// row is read with stride inca (1 for a row of A, A's row length for a row
// of Aᵀ), on the row kernels (the same chain of fused multiply-adds as
// [Gemm]). It returns an error, touching nothing, when a size or stride is
// negative, ldb is below n, or a slice is too short.
func MulAddRow[F Float](c, a []F, inca int, b []F, ldb, k, n int, acc bool) error {
	switch {
	case n < 0 || k < 0 || inca < 0 || ldb < 0:
		return errorf("MulAddRow: negative size or stride: n %d, k %d, inca %d, ldb %d", n, k, inca, ldb)
	case n == 0:
		return nil
	case len(c) < n:
		return errorf("MulAddRow: c has %d elements, want %d", len(c), n)
	case k == 0:
		if !acc {
			clear(c[:n])
		}
		return nil
	case ldb < n && k > 1:
		return errorf("MulAddRow: ldb %d below n %d", ldb, n)
	}
	wantA, okA := mulAdd(k-1, inca, 1)
	wantB, okB := mulAdd(k-1, ldb, n)
	if !okA || !okB || len(a) < wantA || len(b) < wantB {
		return errorf("MulAddRow: a (%d) or b (%d) too short for k %d, n %d, inca %d, ldb %d", len(a), len(b), k, n, inca, ldb)
	}
	pick[F](active).rows(&c[0], &a[0], &b[0], inca, ldb, k, n, acc)
	return nil
}
