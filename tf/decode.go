package tf

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/gemm"
	"github.com/gdattn/gdattn/kvcache"
	"gorgonia.org/tensor"
)

// NewDecoder returns an incremental decoder of the model (see package
// kvcache): a copy of the parameter values, taken with the scope locked, and
// per sequence a cache of every layer's keys and values, so that a new
// token costs one position's projections, its attention over the cached
// keys and values, and the output layer. The decoder computes what the
// generation graph computes (within rounding); it does not see later
// changes of the parameters (make a new one after training further). With
// a model trained on a device, sync the parameters to the host first.
func (m *GPT) NewDecoder() (kvcache.Decoder, error) {
	m.s.Lock()
	defer m.s.Unlock()
	if m.s.Dtype() == tensor.Float32 {
		return newGPTDecoder[float32](m)
	}
	return newGPTDecoder[float64](m)
}

// gptDecoder is the GPT's snapshot: per layer the layer norms, the heads'
// projections stacked into one (d, 3d) matrix (columns: every head's q,
// then k, then v), the output projections stacked (d, d), and the MLP.
type gptDecoder[F kvcache.Float] struct {
	T, V, d, H, hd, F int
	wte, wpe          []F
	layers            []gptLayer[F]
	head              kvcache.Head[F]
	g                 F // the softmax scale 1/√(d/H)
}

type gptLayer[F kvcache.Float] struct {
	ln1s, ln1b, ln2s, ln2b []F
	wqkv, wo               []F
	w1, b1, w2, b2         []F
}

// gptRow is one sequence: its window's ids and, per layer, the keys and
// values (len(ids), d) of its positions. By causality (each position
// attends to itself and earlier ones only) they never change once
// computed while the window does not slide.
type gptRow[F kvcache.Float] struct {
	ids  []int
	k, v [][]F
}

func (r *gptRow[F]) IDs() []int { return r.ids }

func (r *gptRow[F]) Clone() kvcache.Row {
	c := &gptRow[F]{ids: append([]int(nil), r.ids...), k: make([][]F, len(r.k)), v: make([][]F, len(r.v))}
	for l := range r.k {
		c.k[l] = append(make([]F, 0, cap(r.k[l])), r.k[l]...)
		c.v[l] = append(make([]F, 0, cap(r.v[l])), r.v[l]...)
	}
	return c
}

func newGPTDecoder[F kvcache.Float](m *GPT) (*gptDecoder[F], error) {
	cfg := m.Cfg
	d, H := cfg.DModel, cfg.Heads
	hd := d / H
	dec := &gptDecoder[F]{T: cfg.Context, V: cfg.Vocab, d: d, H: H, hd: hd, F: cfg.FFHidden, g: F(1 / math.Sqrt(float64(hd)))}
	get := func(name string) ([]F, error) {
		n, ok := m.s.Lookup(m.s.Name(name))
		if !ok {
			return nil, fmt.Errorf("tf: gpt: decoder: parameter %q missing", name)
		}
		return kvcache.Values[F](n)
	}
	var err error
	if dec.wte, err = get("wte/w"); err != nil {
		return nil, err
	}
	if dec.wpe, err = get("wpe"); err != nil {
		return nil, err
	}
	for l := 0; l < cfg.Layers; l++ {
		p := fmt.Sprintf("h%d/", l)
		var ly gptLayer[F]
		for _, x := range []struct {
			dst  *[]F
			name string
		}{{&ly.ln1s, "ln_1/scale"}, {&ly.ln1b, "ln_1/bias"}, {&ly.ln2s, "ln_2/scale"}, {&ly.ln2b, "ln_2/bias"},
			{&ly.w1, "mlp/w1"}, {&ly.b1, "mlp/b1"}, {&ly.w2, "mlp/w2"}, {&ly.b2, "mlp/b2"}} {
			if *x.dst, err = get(p + x.name); err != nil {
				return nil, err
			}
		}
		ly.wqkv = make([]F, d*3*d)
		ly.wo = make([]F, d*d)
		for h := 0; h < H; h++ {
			hp := fmt.Sprintf("%sattn/head%d/", p, h)
			for j, name := range []string{"wq", "wk", "wv"} {
				w, err := get(hp + name) // (d, hd)
				if err != nil {
					return nil, err
				}
				for r := 0; r < d; r++ {
					copy(ly.wqkv[r*3*d+j*d+h*hd:], w[r*hd:(r+1)*hd])
				}
			}
			wo, err := get(hp + "wo") // (hd, d)
			if err != nil {
				return nil, err
			}
			copy(ly.wo[h*hd*d:], wo)
		}
		dec.layers = append(dec.layers, ly)
	}
	dec.head = kvcache.Head[F]{V: cfg.Vocab, D: d, WteT: kvcache.Transpose(dec.wte, cfg.Vocab, d)}
	if dec.head.Scale, err = get("ln_f/scale"); err != nil {
		return nil, err
	}
	if dec.head.Bias, err = get("ln_f/bias"); err != nil {
		return nil, err
	}
	return dec, nil
}

func (dec *gptDecoder[F]) ContextLen() int { return dec.T }
func (dec *gptDecoder[F]) VocabSize() int  { return dec.V }

func (dec *gptDecoder[F]) NewRow() kvcache.Row {
	return &gptRow[F]{k: make([][]F, len(dec.layers)), v: make([][]F, len(dec.layers))}
}

// Append runs the new positions of every row through the blocks together
// (one matrix product per projection for all rows), each position
// attending to its row's cached keys and values and to the new ones up to
// itself. A row whose window slides is recomputed from its last T ids.
func (dec *gptDecoder[F]) Append(rows []kvcache.Row, chunks [][]int, logits [][]float64) error {
	if err := kvcache.CheckChunks(rows, chunks, logits, dec.V); err != nil {
		return err
	}
	d, T := dec.d, dec.T
	type span struct {
		r      *gptRow[F]
		lo, n  int // the row's first new position, the number of new positions
		offset int // its first row in the stacked positions
	}
	spans := make([]span, len(rows))
	total := 0
	for b, row := range rows {
		r, ok := row.(*gptRow[F])
		if !ok {
			return fmt.Errorf("tf: gpt: decoder: row %d is a %T, not this decoder's", b, row)
		}
		chunk := chunks[b]
		if len(r.ids)+len(chunk) > T {
			// The window slides: every position moves, recompute it all.
			kept, _ := kvcache.Window(r.ids, chunk, T)
			r.ids = r.ids[:0]
			for l := range r.k {
				r.k[l], r.v[l] = r.k[l][:0], r.v[l][:0]
			}
			chunk = kept
		}
		spans[b] = span{r: r, lo: len(r.ids), n: len(chunk), offset: total}
		r.ids = append(r.ids, chunk...)
		total += len(chunk)
	}
	// x (total, d): token plus positional embeddings of the new positions.
	x := make([]F, total*d)
	for _, s := range spans {
		for i := 0; i < s.n; i++ {
			pos := s.lo + i
			id := s.r.ids[pos]
			row := x[(s.offset+i)*d : (s.offset+i+1)*d]
			for j := range row {
				row[j] = dec.wte[id*d+j] + dec.wpe[pos*d+j]
			}
		}
	}
	a := make([]F, total*d)
	qkv := make([]F, total*3*d)
	o := make([]F, total*d)
	hid := make([]F, total*dec.F)
	var scores []F
	for l := range dec.layers {
		ly := &dec.layers[l]
		kvcache.LayerNorm(x, total, d, ly.ln1s, ly.ln1b, 1e-5, a)
		kvcache.MatMul(false, total, 3*d, d, a, ly.wqkv, false, qkv)
		for _, s := range spans {
			r := s.r
			if cap(r.k[l]) < len(r.ids)*d {
				r.k[l] = append(make([]F, 0, T*d), r.k[l]...)
				r.v[l] = append(make([]F, 0, T*d), r.v[l]...)
			}
			for i := 0; i < s.n; i++ {
				p := qkv[(s.offset+i)*3*d:]
				r.k[l] = append(r.k[l], p[d:2*d]...)
				r.v[l] = append(r.v[l], p[2*d:3*d]...)
			}
			// Per head: scores g·q·kᵀ of the new positions against every
			// key, masked causally (position lo+i sees keys 0..lo+i), then
			// the weighted values, as matrix products.
			keys, vals := r.k[l], r.v[l]
			L := s.lo + s.n
			if cap(scores) < s.n*L {
				scores = make([]F, s.n*L, s.n*T)
			}
			w := scores[:s.n*L]
			for h := 0; h < dec.H; h++ {
				lo := h * dec.hd
				if err := gemm.Gemm(false, true, s.n, L, dec.hd, 1, qkv[s.offset*3*d+lo:], 3*d, keys[lo:], d, 0, w, L); err != nil {
					return fmt.Errorf("tf: gpt: decoder: %w", err)
				}
				for i := 0; i < s.n; i++ {
					row := w[i*L : (i+1)*L]
					seen := s.lo + i + 1
					for t := range row[:seen] {
						row[t] *= dec.g
					}
					kvcache.SoftmaxRow(row[:seen])
					clear(row[seen:])
				}
				if err := gemm.Gemm(false, false, s.n, dec.hd, L, 1, w, L, vals[lo:], d, 0, o[s.offset*d+lo:], d); err != nil {
					return fmt.Errorf("tf: gpt: decoder: %w", err)
				}
			}
		}
		kvcache.MatMul(false, total, d, d, o, ly.wo, true, x) // x += attn
		kvcache.LayerNorm(x, total, d, ly.ln2s, ly.ln2b, 1e-5, a)
		kvcache.MatMul(false, total, dec.F, d, a, ly.w1, false, hid)
		kvcache.AddBias(hid, ly.b1)
		kvcache.GELU(hid)
		kvcache.MatMul(false, total, d, dec.F, hid, ly.w2, true, x) // x += mlp
		kvcache.AddBias(x, ly.b2)
	}
	var last []F
	var outs [][]float64
	for b, s := range spans {
		if logits[b] == nil {
			continue
		}
		last = append(last, x[(s.offset+s.n-1)*d:(s.offset+s.n)*d]...)
		outs = append(outs, logits[b])
	}
	if len(outs) > 0 {
		dec.head.Logits(last, len(outs), outs)
	}
	return nil
}
