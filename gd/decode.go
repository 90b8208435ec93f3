package gd

import (
	"fmt"

	"github.com/gdattn/gdattn/gemm"
	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/kvcache"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// NewDecoder returns an incremental decoder of the model (see package
// kvcache): a copy of the parameter values and of the heads' kernel
// weights, taken with the scope locked, and per sequence a cache of the
// values w_{e,t_i} − E(w_e|f_{i,k}) of its positions at every step k (one
// set with Steps = 1 or MeanE), so that a new token costs, per step, its
// heads' weighted sums over the cached values, the merge through the P_m,
// E(w_e|f) of the new position for the next step, and the output layer.
//
// The kernel weights a^m_{ji} are positional only (queries and keys are
// Λ_m p_j and Λ_m p_i): they are computed once by the model's own graph, so
// every kernel the model accepts (built-in, combined or user) decodes. The
// causal invariant: position i's values depend on t_i and on f_{i,k}, which
// depends on t_0..t_{i−1} only, so a cached value never changes when ids are
// appended. With Steps = 1 or MeanE a value depends on its token alone, not
// on its position, so when the window slides a row drops its oldest value;
// otherwise (E(w_e|f_{i,k}) depends on the positions before i) the row is
// recomputed from the cropped window.
//
// The decoder does not see later changes of the parameters (make a new one
// after training further); with a model trained on a device, sync the
// parameters to the host first.
func (m *LM) NewDecoder() (_ kvcache.Decoder, err error) {
	m.s.Lock()
	defer m.s.Unlock()
	if m.s.Dtype() == tensor.Float32 {
		return newLMDecoder[float32](m)
	}
	return newLMDecoder[float64](m)
}

// lmDecoder is the GD LM's snapshot.
type lmDecoder[F kvcache.Float] struct {
	T, V, d, M, K int
	meanE, diagP  bool
	wte           []F
	mean          []F // w̄_e, as GatherCentered subtracts it
	e0            []F // E(w_e|f=0), the expectation at position 0 (steps > 1)
	kq            []F // (T+1, M, T): a^m_{q,i}
	p             []F // (M·d, d) stacked P_m, or (M, d) with DiagP
	ff            bool
	ffHidden      int
	lns, lnb      []F
	w1, b1        []F
	w2, b2        []F
	head          kvcache.Head[F]
}

// lmRow is one sequence: the ids of its window, the values (len(ids), d)
// of its positions per step, and per step k ≥ 1 the expectation
// E(w_e|f_{L,k}) at the next position L = len(ids), which the next id's
// value at step k subtracts.
type lmRow[F kvcache.Float] struct {
	ids  []int
	vals [][]F
	pend [][]F
}

func (r *lmRow[F]) IDs() []int { return r.ids }

func (r *lmRow[F]) Clone() kvcache.Row {
	c := &lmRow[F]{ids: append([]int(nil), r.ids...), vals: make([][]F, len(r.vals)), pend: make([][]F, len(r.pend))}
	for k := range r.vals {
		c.vals[k] = append(make([]F, 0, cap(r.vals[k])), r.vals[k]...)
	}
	for k := range r.pend {
		c.pend[k] = append([]F(nil), r.pend[k]...)
	}
	return c
}

func newLMDecoder[F kvcache.Float](m *LM) (*lmDecoder[F], error) {
	cfg := m.Cfg
	T, d, M := cfg.Context, cfg.DPrime, cfg.Heads
	dec := &lmDecoder[F]{T: T, V: cfg.Vocab, d: d, M: M, K: cfg.Steps, meanE: cfg.MeanE, diagP: cfg.DiagP, ff: cfg.FF, ffHidden: cfg.FFHidden}
	get := func(name string) ([]F, error) {
		n, ok := m.s.Lookup(m.s.Name(name))
		if !ok {
			return nil, fmt.Errorf("gd: lm: decoder: parameter %q missing", name)
		}
		return kvcache.Values[F](n)
	}
	var err error
	if dec.wte, err = get("wte/w"); err != nil {
		return nil, err
	}
	dec.head = kvcache.Head[F]{V: dec.V, D: d, WteT: kvcache.Transpose(dec.wte, dec.V, d)}
	// The kernel weights, by the model's graph: positional only.
	if len(m.kernels) != M {
		return nil, fmt.Errorf("gd: lm: decoder: %d kernel nodes for %d heads", len(m.kernels), M)
	}
	mc, err := graph.NewMachine(m.s, nil, graph.MachineOptions{NoGrad: true, Outputs: append(G.Nodes(nil), m.kernels...)})
	if err != nil {
		return nil, fmt.Errorf("gd: lm: decoder: %w", err)
	}
	defer mc.Close()
	if err := mc.Run(); err != nil {
		return nil, fmt.Errorf("gd: lm: decoder: kernel weights: %w", err)
	}
	dec.kq = make([]F, (T+1)*M*T)
	for h, n := range m.kernels {
		w, err := kvcache.Values[F](n) // (1, T+1, T)
		if err != nil {
			return nil, err
		}
		for q := 0; q <= T; q++ {
			copy(dec.kq[(q*M+h)*T:(q*M+h+1)*T], w[q*T:(q+1)*T])
		}
	}
	for h := 0; h < M; h++ {
		p, err := get(fmt.Sprintf("head%d/p", h))
		if err != nil {
			return nil, err
		}
		dec.p = append(dec.p, p...)
	}
	mean := make([]float64, d)
	for r := 0; r < dec.V; r++ {
		for j, x := range dec.wte[r*d : (r+1)*d] {
			mean[j] += float64(x)
		}
	}
	dec.mean = make([]F, d)
	for j := range mean {
		dec.mean[j] = F(mean[j] / float64(dec.V))
	}
	if dec.K > 1 && !dec.meanE {
		dec.e0 = make([]F, d)
		dec.expect(make([]F, d), 1, dec.e0)
	}
	if dec.ff {
		for _, x := range []struct {
			dst  *[]F
			name string
		}{{&dec.lns, "ff/ln/scale"}, {&dec.lnb, "ff/ln/bias"}, {&dec.w1, "ff/mlp/w1"}, {&dec.b1, "ff/mlp/b1"}, {&dec.w2, "ff/mlp/w2"}, {&dec.b2, "ff/mlp/b2"}} {
			if *x.dst, err = get(x.name); err != nil {
				return nil, err
			}
		}
	}
	if dec.head.Scale, err = get("ln_f/scale"); err != nil {
		return nil, err
	}
	if dec.head.Bias, err = get("ln_f/bias"); err != nil {
		return nil, err
	}
	return dec, nil
}

// shared reports whether the values are the same at every step and do not
// depend on their positions (Steps = 1, or MeanE).
func (dec *lmDecoder[F]) shared() bool { return dec.K == 1 || dec.meanE }

// expect writes E(w_e|f) = softmax(f W_e) W_eᵀ of the n rows f (n, d) into
// e (n, d): the exact cross-attention over the vocabulary.
func (dec *lmDecoder[F]) expect(f []F, n int, e []F) {
	s := make([]F, n*dec.V)
	kvcache.WideMatMul(n, dec.V, dec.d, f, dec.head.WteT, s)
	for r := 0; r < n; r++ {
		kvcache.SoftmaxRow(s[r*dec.V : (r+1)*dec.V])
	}
	kvcache.MatMul(false, n, dec.d, dec.V, s, dec.wte, false, e)
}

func (dec *lmDecoder[F]) ContextLen() int { return dec.T }
func (dec *lmDecoder[F]) VocabSize() int  { return dec.V }

func (dec *lmDecoder[F]) NewRow() kvcache.Row {
	r := &lmRow[F]{}
	dec.reset(r)
	return r
}

func (dec *lmDecoder[F]) reset(r *lmRow[F]) {
	r.ids = r.ids[:0]
	n := dec.K
	if dec.shared() {
		n = 1
	}
	if len(r.vals) != n {
		r.vals = make([][]F, n)
	}
	for k := range r.vals {
		r.vals[k] = r.vals[k][:0]
	}
	if !dec.shared() {
		r.pend = make([][]F, dec.K)
		for k := 1; k < dec.K; k++ {
			r.pend[k] = append([]F(nil), dec.e0...)
		}
	}
}

// Append computes the new positions of every row step by step; at each
// step the new values enter the row's cache, every new query position sums
// its heads' weighted values, and the merges through the P_m of all rows'
// queries are one matrix product.
func (dec *lmDecoder[F]) Append(rows []kvcache.Row, chunks [][]int, logits [][]float64) error {
	if err := kvcache.CheckChunks(rows, chunks, logits, dec.V); err != nil {
		return err
	}
	d, T, M := dec.d, dec.T, dec.M
	type span struct {
		r      *lmRow[F]
		lo, n  int // the row's first new position, the number of new positions
		offset int // its first query in the stacked queries
	}
	spans := make([]span, len(rows))
	total := 0
	for b, row := range rows {
		r, ok := row.(*lmRow[F])
		if !ok {
			return fmt.Errorf("gd: lm: decoder: row %d is a %T, not this decoder's", b, row)
		}
		chunk := chunks[b]
		if len(r.ids)+len(chunk) > T {
			kept, dropped := kvcache.Window(r.ids, chunk, T)
			if dec.shared() && dropped < len(r.ids) {
				// The values do not depend on positions: drop the oldest.
				r.ids = append(r.ids[:0], r.ids[dropped:]...)
				r.vals[0] = append(r.vals[0][:0], r.vals[0][dropped*d:]...)
			} else {
				dec.reset(r)
				chunk = kept
			}
		}
		spans[b] = span{r: r, lo: len(r.ids), n: len(chunk), offset: total}
		r.ids = append(r.ids, chunk...)
		total += len(chunk)
	}
	f := make([]F, total*d)   // f_k at the new query positions lo+1..lo+n
	u := make([]F, total*M*d) // the heads' weighted sums, (total, M·d)
	var next []F              // E(w_e|f_{q,k}) of the queries, for step k
	for k := 0; k < dec.K; k++ {
		kv := k
		if dec.shared() {
			kv = 0
		}
		for _, s := range spans {
			r := s.r
			switch {
			case k == 0:
				for i := 0; i < s.n; i++ {
					w := dec.wte[r.ids[s.lo+i]*d:][:d]
					for j, x := range w {
						r.vals[0] = append(r.vals[0], x-dec.mean[j])
					}
				}
			case !dec.shared():
				for i := 0; i < s.n; i++ {
					e := r.pend[k]
					if i > 0 {
						e = next[(s.offset+i-1)*d:][:d]
					}
					w := dec.wte[r.ids[s.lo+i]*d:][:d]
					for j, x := range w {
						r.vals[k] = append(r.vals[k], x-e[j])
					}
				}
				copy(r.pend[k], next[(s.offset+s.n-1)*d:][:d])
			}
			vals := r.vals[kv]
			for i := 0; i < s.n; i++ {
				q := s.lo + i + 1 // the query after the new id: keys 0..q-1
				if err := gemm.Gemm(false, false, M, d, q, 1, dec.kq[q*M*T:], T, vals, d, 0, u[(s.offset+i)*M*d:], d); err != nil {
					return fmt.Errorf("gd: lm: decoder: %w", err)
				}
			}
		}
		if dec.diagP {
			for qi := 0; qi < total; qi++ {
				fr := f[qi*d:][:d]
				for h := 0; h < M; h++ {
					uh, ph := u[(qi*M+h)*d:][:d], dec.p[h*d:][:d]
					for j := range fr {
						fr[j] += uh[j] * ph[j]
					}
				}
			}
		} else {
			kvcache.MatMul(false, total, d, M*d, u, dec.p, true, f) // f += Σ_m u_m P_m
		}
		if k+1 < dec.K && !dec.meanE {
			if next == nil {
				next = make([]F, total*d)
			}
			dec.expect(f, total, next)
		}
	}
	// The output layer at each row's last position.
	var h []F
	var outs [][]float64
	for b, s := range spans {
		if logits[b] == nil {
			continue
		}
		h = append(h, f[(s.offset+s.n-1)*d:][:d]...)
		outs = append(outs, logits[b])
	}
	n := len(outs)
	if n == 0 {
		return nil
	}
	if dec.ff {
		a := make([]F, n*d)
		kvcache.LayerNorm(h, n, d, dec.lns, dec.lnb, 1e-5, a)
		hid := make([]F, n*dec.ffHidden)
		kvcache.MatMul(false, n, dec.ffHidden, d, a, dec.w1, false, hid)
		kvcache.AddBias(hid, dec.b1)
		kvcache.GELU(hid)
		kvcache.MatMul(false, n, d, dec.ffHidden, hid, dec.w2, true, h) // h += FF(LN(h))
		kvcache.AddBias(h, dec.b2)
	}
	dec.head.Logits(h, n, outs)
	return nil
}
