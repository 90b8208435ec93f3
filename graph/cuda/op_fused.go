package cuda

import (
	"github.com/gdattn/gdattn/ops"
)

// Device versions of the fused ops of package ops. The ops keep host state
// between their forward and backward nodes; on the device the intermediate
// values live in buffers shared by the nodes of one forward op (keyed by
// that op: a gradient op's Forward or Head), and a backward node is lowered
// only when the node it reads them from runs on the device, so that every
// device node finds its inputs computed in the same Run.

// shared holds the device buffers shared by the nodes of one fused op.
type shared struct {
	fwd, grad bool // the forward / gradient node runs on the device
	bufs      map[string]Ptr
	plan      any // sizes and buffers the forward node chose
}

// sharedOf returns the shared buffers of the fused op key.
func (x *Exec) sharedOf(key any) *shared {
	if x.shared == nil {
		x.shared = map[any]*shared{}
	}
	s, ok := x.shared[key]
	if !ok {
		s = &shared{bufs: map[string]Ptr{}}
		x.shared[key] = s
	}
	return s
}

// buf returns the shared buffer name of elems elements of v's dtype
// (allocated once).
func (x *Exec) buf(s *shared, name string, v *value, elems int) (Ptr, error) {
	if p, ok := s.bufs[name]; ok {
		return p, nil
	}
	p, err := x.alloc(int64(elems) * int64(v.dt.Size()))
	if err != nil {
		return 0, err
	}
	s.bufs[name] = p
	return p, nil
}

// lowerConcatLast maps ops.ConcatLast, the concatenation along the last
// axis of inputs that have the same number of rows (all but the last
// dimension taken together).
func lowerConcatLast(v *value) devOp {
	if len(v.shape) == 0 {
		return nil
	}
	width := v.shape[len(v.shape)-1]
	if width == 0 {
		return nil
	}
	rows := v.size / width
	var bands []band
	off := int64(0)
	for _, in := range v.ins {
		if len(in.shape) == 0 || rows == 0 || in.size%rows != 0 {
			return nil
		}
		w := int64(in.size / rows)
		if in.shape[len(in.shape)-1] != int(w) {
			return nil
		}
		bands = append(bands, band{outer: int64(rows), part: w, inner: 1, xfull: w, yfull: int64(width), yoff: off})
		off += w
	}
	if off != int64(width) {
		return nil
	}
	return devFunc(func(x *Exec, v *value) error {
		for i, b := range bands {
			if err := x.bandCopy(v, v.ins[i].ptr, v.ptr, b); err != nil {
				return err
			}
		}
		return nil
	})
}

// expectPart is the node of an expectation op lowerExpect lowers.
type expectPart int

const (
	expectFwd   expectPart = iota // ops.ExpectationOp
	expectDF                      // ops.ExpectationGradOp
	expectParam                   // ops.ExpectationParamGradOp
)

// lowerExpect maps the expectation op E = softmax(f K) Vᵀ (f (…, d'), K and
// V (d', C)) and its gradients: df (ExpectationGrad{f}, inputs f, K, V, E,
// dE) and dK, dV (ExpectationGrad{1|2}, inputs f, K, V, E, dE, df; wrt 1
// or 2). fwd is the forward op, which keys the buffers its nodes share.
func lowerExpect(x *Exec, v *value, fwd *ops.ExpectationOp, kind expectPart, wrt int) (devOp, error) {
	if len(v.ins) < 3 || fwd == nil {
		return nil, nil
	}
	// f of rank above 2 is the matrix of its rows.
	f, k, vv := v.ins[0], v.ins[1], v.ins[2]
	if len(f.shape) < 2 || len(k.shape) != 2 || len(vv.shape) != 2 || f.shape[len(f.shape)-1] != k.shape[0] || !k.shape.Eq(vv.shape) {
		return nil, nil
	}
	dp, c := k.shape[0], k.shape[1]
	m := f.size / dp
	sh := x.sharedOf(fwd)
	p, err := x.buf(sh, "p", v, m*c) // probabilities (M, C)
	if err != nil {
		return nil, err
	}
	ds, err := x.buf(sh, "ds", v, m*c) // dL/dlogits (M, C)
	if err != nil {
		return nil, err
	}
	rows, cols := int64(m), int32(c)
	smk, smgk := softmaxKernel("softmax_rows", c), softmaxKernel("softmax_grad_rows", c)
	probs := func(x *Exec, v *value) error {
		if err := x.b.Gemm(v.dt, false, false, m, c, dp, 1, f.ptr, dp, 0, k.ptr, c, 0, 0, p, c, 0, 1); err != nil {
			return err
		}
		return x.launch(v, smk, rows, cols, int32(0), p, p)
	}
	switch kind {
	case expectFwd:
		if v.size != m*dp {
			return nil, nil
		}
		sh.fwd = true
		return devFunc(func(x *Exec, v *value) error {
			if err := probs(x, v); err != nil {
				return err
			}
			return x.b.Gemm(v.dt, false, true, m, dp, c, 1, p, c, 0, vv.ptr, c, 0, 0, v.ptr, dp, 0, 1)
		}), nil
	}
	if len(v.ins) < 5 {
		return nil, nil
	}
	dE := v.ins[4]
	if dE.size != m*dp {
		return nil, nil
	}
	fwdDev := sh.fwd
	// dS = softmax'(P)·(dE V): the gradient of the logits.
	dlogits := func(x *Exec, v *value) error {
		if !fwdDev {
			if err := probs(x, v); err != nil {
				return err
			}
		}
		if err := x.b.Gemm(v.dt, false, false, m, c, dp, 1, dE.ptr, dp, 0, vv.ptr, c, 0, 0, ds, c, 0, 1); err != nil {
			return err
		}
		return x.launch(v, smgk, rows, cols, int32(0), p, ds, ds)
	}
	if kind == expectDF {
		if len(v.ins) != 5 || v.size != m*dp {
			return nil, nil
		}
		sh.grad = true
		return devFunc(func(x *Exec, v *value) error {
			if err := dlogits(x, v); err != nil {
				return err
			}
			return x.b.Gemm(v.dt, false, true, m, dp, c, 1, ds, c, 0, k.ptr, c, 0, 0, v.ptr, dp, 0, 1)
		}), nil
	}
	if len(v.ins) != 6 || v.size != dp*c || (wrt != 1 && wrt != 2) {
		return nil, nil
	}
	gradDev := sh.grad && fwdDev
	if wrt == 2 {
		// dV = dEᵀ P.
		return devFunc(func(x *Exec, v *value) error {
			if !fwdDev {
				if err := probs(x, v); err != nil {
					return err
				}
			}
			return x.b.Gemm(v.dt, true, false, dp, c, m, 1, dE.ptr, dp, 0, p, c, 0, 0, v.ptr, c, 0, 1)
		}), nil
	}
	// dK = fᵀ dS.
	return devFunc(func(x *Exec, v *value) error {
		if !gradDev {
			if err := dlogits(x, v); err != nil {
				return err
			}
		}
		return x.b.Gemm(v.dt, true, false, dp, c, m, 1, f.ptr, dp, 0, ds, c, 0, 0, v.ptr, c, 0, 1)
	}), nil
}
