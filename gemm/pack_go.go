package gemm

import "unsafe"

// Unrolled forms of the portable packing routines for the tile sizes of
// the AVX2 and portable blockings (MR 4 or 6, NR 4, 8 or 16), which run
// where the AVX-512 packing assembly does not: fixed-size moves instead of a
// copy call per line (packColsGo) and of a loop over a slice of rows per
// element (gatherRowsGo). They move the same elements as the loops.

// gatherFull is gatherRowsGo for h = width ∈ {4, 6, 8, 16}; it reports
// false, writing nothing, for any other size.
func gatherFull[F Float](dst, src []F, off, ld, h, kb, width int) bool {
	if h != width {
		return false
	}
	switch width {
	case 4:
		gather4(dst[:kb*4], src, off, ld, kb)
	case 6:
		gather6(dst[:kb*6], src, off, ld, kb)
	case 8:
		gather8(dst[:kb*8], src, off, ld, kb)
	case 16:
		gather8x2(dst[:kb*16], src, off, ld, kb)
	default:
		return false
	}
	return true
}

func gather4[F Float](dst, src []F, off, ld, kb int) {
	r0, r1 := src[off:][:kb], src[off+ld:][:kb]
	r2, r3 := src[off+2*ld:][:kb], src[off+3*ld:][:kb]
	for l := 0; l < kb; l++ {
		d := (*[4]F)(dst[l*4:])
		d[0], d[1], d[2], d[3] = r0[l], r1[l], r2[l], r3[l]
	}
}

func gather6[F Float](dst, src []F, off, ld, kb int) {
	r0, r1 := src[off:][:kb], src[off+ld:][:kb]
	r2, r3 := src[off+2*ld:][:kb], src[off+3*ld:][:kb]
	r4, r5 := src[off+4*ld:][:kb], src[off+5*ld:][:kb]
	for l := 0; l < kb; l++ {
		d := (*[6]F)(dst[l*6:])
		d[0], d[1], d[2], d[3], d[4], d[5] = r0[l], r1[l], r2[l], r3[l], r4[l], r5[l]
	}
}

func gather8[F Float](dst, src []F, off, ld, kb int) {
	r0, r1 := src[off:][:kb], src[off+ld:][:kb]
	r2, r3 := src[off+2*ld:][:kb], src[off+3*ld:][:kb]
	r4, r5 := src[off+4*ld:][:kb], src[off+5*ld:][:kb]
	r6, r7 := src[off+6*ld:][:kb], src[off+7*ld:][:kb]
	for l := 0; l < kb; l++ {
		d := (*[8]F)(dst[l*8:])
		d[0], d[1], d[2], d[3] = r0[l], r1[l], r2[l], r3[l]
		d[4], d[5], d[6], d[7] = r4[l], r5[l], r6[l], r7[l]
	}
}

// gather8x2 is the 16-wide gather as two passes of eight rows, each
// writing its half of every line (eight streams at a time: sixteen would
// not fit the registers).
func gather8x2[F Float](dst, src []F, off, ld, kb int) {
	l0 := gather16Asm(dst, src, off, ld, kb) // float32 on amd64: 4×4 transposes in assembly
	for half := 0; half < 2; half++ {
		o := off + half*8*ld
		r0, r1 := src[o:][:kb], src[o+ld:][:kb]
		r2, r3 := src[o+2*ld:][:kb], src[o+3*ld:][:kb]
		r4, r5 := src[o+4*ld:][:kb], src[o+5*ld:][:kb]
		r6, r7 := src[o+6*ld:][:kb], src[o+7*ld:][:kb]
		for l := l0; l < kb; l++ {
			d := (*[8]F)(dst[l*16+half*8:])
			d[0], d[1], d[2], d[3] = r0[l], r1[l], r2[l], r3[l]
			d[4], d[5], d[6], d[7] = r4[l], r5[l], r6[l], r7[l]
		}
	}
}

// colsFull packs the full panels of packColsGo for mr ∈ {4, 6, 8, 16}
// (element by element: an array assignment would call memmove) and returns
// how many it packed: 0 for any other mr. Where a panel's line is shorter
// than a cache line (mr·size < 64 bytes: the transposed A of the AVX2 and
// portable blockings), it runs over blocks of eight lines (cols4, cols6,
// cols8): each panel gets the block's eight consecutive stretches (whole
// cache lines) while the eight source lines are read side by side, instead
// of one source line scattered over every panel at a time (in a float32
// block of 512 lines the panels are exactly three pages apart, and the
// partly written lines of hundreds of panels compete for the same cache
// sets). Panels of whole lines (B's slivers) are copied line by line.
// cols6's blocks run in assembly for float32 on amd64 (cols6x8f32), with
// the next block's lines prefetched.
func colsFull[F Float](dst, src []F, lda, cols, kb, mr int) int {
	full := cols / mr
	if full == 0 {
		return 0
	}
	var z F
	if short := mr*int(unsafe.Sizeof(z)) < 64; short {
		switch mr {
		case 4:
			cols4(dst, src, lda, full, kb)
			return full
		case 6:
			cols6(dst, src, lda, full, kb)
			return full
		case 8:
			cols8(dst, src, lda, full, kb)
			return full
		}
	}
	switch mr {
	case 4:
		for l := 0; l < kb; l++ {
			s := src[l*lda:][:full*4]
			for q := 0; q < full; q++ {
				d, v := (*[4]F)(dst[q*4*kb+l*4:]), (*[4]F)(s[q*4:])
				d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			}
		}
	case 6:
		for l := 0; l < kb; l++ {
			s := src[l*lda:][:full*6]
			for q := 0; q < full; q++ {
				d, v := (*[6]F)(dst[q*6*kb+l*6:]), (*[6]F)(s[q*6:])
				d[0], d[1], d[2], d[3], d[4], d[5] = v[0], v[1], v[2], v[3], v[4], v[5]
			}
		}
	case 8:
		for l := 0; l < kb; l++ {
			s := src[l*lda:][:full*8]
			for q := 0; q < full; q++ {
				d, v := (*[8]F)(dst[q*8*kb+l*8:]), (*[8]F)(s[q*8:])
				d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
				d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			}
		}
	case 16:
		if cols16Asm(dst, src, lda, full, kb) { // float32 on amd64
			break
		}
		for l := 0; l < kb; l++ {
			s := src[l*lda:][:full*16]
			for q := 0; q < full; q++ {
				d, v := (*[16]F)(dst[q*16*kb+l*16:]), (*[16]F)(s[q*16:])
				d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
				d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
				d[8], d[9], d[10], d[11] = v[8], v[9], v[10], v[11]
				d[12], d[13], d[14], d[15] = v[12], v[13], v[14], v[15]
			}
		}
	default:
		return 0
	}
	return full
}

// cols4 is colsFull for mr = 4.
func cols4[F Float](dst, src []F, lda, full, kb int) {
	w := full * 4
	l := 0
	for ; l+8 <= kb; l += 8 {
		s0, s1 := src[l*lda:][:w], src[(l+1)*lda:][:w]
		s2, s3 := src[(l+2)*lda:][:w], src[(l+3)*lda:][:w]
		s4, s5 := src[(l+4)*lda:][:w], src[(l+5)*lda:][:w]
		s6, s7 := src[(l+6)*lda:][:w], src[(l+7)*lda:][:w]
		for q := 0; q < full; q++ {
			o := q*4*kb + l*4
			d, v := (*[4]F)(dst[o:]), (*[4]F)(s0[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d, v = (*[4]F)(dst[o+4:]), (*[4]F)(s1[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d, v = (*[4]F)(dst[o+8:]), (*[4]F)(s2[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d, v = (*[4]F)(dst[o+12:]), (*[4]F)(s3[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d, v = (*[4]F)(dst[o+16:]), (*[4]F)(s4[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d, v = (*[4]F)(dst[o+20:]), (*[4]F)(s5[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d, v = (*[4]F)(dst[o+24:]), (*[4]F)(s6[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d, v = (*[4]F)(dst[o+28:]), (*[4]F)(s7[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
		}
	}
	for ; l < kb; l++ {
		s := src[l*lda:][:w]
		for q := 0; q < full; q++ {
			d, v := (*[4]F)(dst[q*4*kb+l*4:]), (*[4]F)(s[q*4:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
		}
	}
}

// cols6 is colsFull for mr = 6.
func cols6[F Float](dst, src []F, lda, full, kb int) {
	w := full * 6
	l := cols6Asm(dst, src, lda, full, kb) // float32 on amd64: the blocks in assembly
	for ; l+8 <= kb; l += 8 {
		s0, s1 := src[l*lda:][:w], src[(l+1)*lda:][:w]
		s2, s3 := src[(l+2)*lda:][:w], src[(l+3)*lda:][:w]
		s4, s5 := src[(l+4)*lda:][:w], src[(l+5)*lda:][:w]
		s6, s7 := src[(l+6)*lda:][:w], src[(l+7)*lda:][:w]
		for q := 0; q < full; q++ {
			o := q*6*kb + l*6
			d, v := (*[6]F)(dst[o:]), (*[6]F)(s0[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
			d, v = (*[6]F)(dst[o+6:]), (*[6]F)(s1[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
			d, v = (*[6]F)(dst[o+12:]), (*[6]F)(s2[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
			d, v = (*[6]F)(dst[o+18:]), (*[6]F)(s3[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
			d, v = (*[6]F)(dst[o+24:]), (*[6]F)(s4[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
			d, v = (*[6]F)(dst[o+30:]), (*[6]F)(s5[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
			d, v = (*[6]F)(dst[o+36:]), (*[6]F)(s6[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
			d, v = (*[6]F)(dst[o+42:]), (*[6]F)(s7[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
		}
	}
	for ; l < kb; l++ {
		s := src[l*lda:][:w]
		for q := 0; q < full; q++ {
			d, v := (*[6]F)(dst[q*6*kb+l*6:]), (*[6]F)(s[q*6:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5] = v[4], v[5]
		}
	}
}

// cols8 is colsFull for mr = 8.
func cols8[F Float](dst, src []F, lda, full, kb int) {
	w := full * 8
	l := 0
	for ; l+8 <= kb; l += 8 {
		s0, s1 := src[l*lda:][:w], src[(l+1)*lda:][:w]
		s2, s3 := src[(l+2)*lda:][:w], src[(l+3)*lda:][:w]
		s4, s5 := src[(l+4)*lda:][:w], src[(l+5)*lda:][:w]
		s6, s7 := src[(l+6)*lda:][:w], src[(l+7)*lda:][:w]
		for q := 0; q < full; q++ {
			o := q*8*kb + l*8
			d, v := (*[8]F)(dst[o:]), (*[8]F)(s0[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			d, v = (*[8]F)(dst[o+8:]), (*[8]F)(s1[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			d, v = (*[8]F)(dst[o+16:]), (*[8]F)(s2[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			d, v = (*[8]F)(dst[o+24:]), (*[8]F)(s3[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			d, v = (*[8]F)(dst[o+32:]), (*[8]F)(s4[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			d, v = (*[8]F)(dst[o+40:]), (*[8]F)(s5[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			d, v = (*[8]F)(dst[o+48:]), (*[8]F)(s6[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
			d, v = (*[8]F)(dst[o+56:]), (*[8]F)(s7[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
		}
	}
	for ; l < kb; l++ {
		s := src[l*lda:][:w]
		for q := 0; q < full; q++ {
			d, v := (*[8]F)(dst[q*8*kb+l*8:]), (*[8]F)(s[q*8:])
			d[0], d[1], d[2], d[3] = v[0], v[1], v[2], v[3]
			d[4], d[5], d[6], d[7] = v[4], v[5], v[6], v[7]
		}
	}
}
