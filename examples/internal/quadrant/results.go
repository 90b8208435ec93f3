package quadrant

import (
	"fmt"
	"math"
	"sort"

	"github.com/gdattn/gdattn/data"
	"github.com/gdattn/gdattn/examples/internal/sweep"
	"github.com/gdattn/gdattn/gd"
	"github.com/gdattn/gdattn/tf"
	"github.com/gdattn/gdattn/train"
)

// curvePoint is one evaluation of the training curves, over seeds.
type curvePoint struct {
	Step int        `json:"step"`
	Top1 sweep.Stat `json:"top1"`
	NLL  sweep.Stat `json:"nll"`
}

// modelResult summarises one model (GD or TF) of one kernel over seeds.
type modelResult struct {
	// Curve is test top-1 and NLL on the first EvalM test contexts against
	// training steps (the horizontal axis of Figure 6).
	Curve []curvePoint `json:"curve"`
	// Top1 and NLL are the final values on all M test contexts.
	Top1         sweep.Stat `json:"top1"`
	NLL          sweep.Stat `json:"nll"`
	TrainSeconds sweep.Stat `json:"train_seconds"`
	// Gamma is the learned kernel parameter g of every seed (NaN for the
	// linear kernel), and Alpha the learned GD step α (GD only).
	Gamma sweep.Stat  `json:"gamma"`
	Alpha *sweep.Stat `json:"alpha,omitempty"`
}

// analysisResult is the parameter analysis of Figures 8-9 over the TF seeds.
type analysisResult struct {
	QDiagonality  sweep.Stat `json:"q_diagonality"`
	QSpread       sweep.Stat `json:"q_spread"`
	EDDiagonality sweep.Stat `json:"ed_diagonality"`
	EDSpread      sweep.Stat `json:"ed_spread"`
	// MEff is the gauge-invariant map from the context labels to the
	// query's f, W_V[label rows]·P·R (d'×d', row convention): unlike E·D it
	// includes the learned readout R, so it does not depend on where in the
	// token the TF writes f. GD has (α/N)·I.
	MEffDiagonality sweep.Stat `json:"meff_diagonality"`
	MEffSpread      sweep.Stat `json:"meff_spread"`
	// Q, ED and MEff of the TF with seed Seed, the run of median test
	// accuracy shown in Figures 7-9 (row-major d×d and d'×d').
	Seed uint64    `json:"seed"`
	Q    gd.Matrix `json:"q"`
	ED   gd.Matrix `json:"ed"`
	MEff gd.Matrix `json:"meff"`
}

// effectiveMap returns W_V[d:d+d', :]·P·R of the first head of l.
func effectiveMap(l oneLayer) gd.Matrix {
	hd := l.Heads[0]
	rows := gd.Matrix{Rows: l.DPrime, Cols: hd.WV.Cols, Data: hd.WV.Data[l.D*hd.WV.Cols : (l.D+l.DPrime)*hd.WV.Cols]}
	return matMul(matMul(rows, hd.P), l.R)
}

func matMul(a, b gd.Matrix) gd.Matrix {
	out := gd.Matrix{Rows: a.Rows, Cols: b.Cols, Data: make([]float64, a.Rows*b.Cols)}
	for i := 0; i < a.Rows; i++ {
		for k := 0; k < a.Cols; k++ {
			v := a.At(i, k)
			for j := 0; j < b.Cols; j++ {
				out.Data[i*b.Cols+j] += v * b.At(k, j)
			}
		}
	}
	return out
}

// mapResult describes the probability maps of Figure 7.
type mapResult struct {
	Seed         uint64 `json:"seed"`          // of the GD and TF shown
	Context      int    `json:"context"`       // index in the test set
	QuadrantCats []int  `json:"quadrant_cats"` // c_1..c_4 of the context
	MostProbable [4]int `json:"most_probable"` // per quadrant, under the true process
	Categories   []int  `json:"categories"`    // the mapped categories
	Grid         int    `json:"grid"`          // points per side
	// MaxAbsDiff is max |p_GD − p_TF| over the grid, per mapped category.
	MaxAbsDiff []float64 `json:"max_abs_diff_gd_tf"`
	// TrueAgree is, per model, the share of grid points where the model's
	// most probable category equals the true one.
	TrueAgree map[string]float64 `json:"true_argmax_agreement"`
	Seconds   map[string]float64 `json:"forward_seconds"`
	File      string             `json:"file"`
}

type kernelResult struct {
	Kernel   string                  `json:"kernel"`
	Models   map[string]*modelResult `json:"models"`
	Analysis *analysisResult         `json:"tf_analysis,omitempty"`
	Map      *mapResult              `json:"map,omitempty"`
	Files    []string                `json:"files"`
}

type results struct {
	Command string `json:"command"`
	Options struct {
		Kernels  []string `json:"kernels"`
		Seeds    int      `json:"seeds"`
		Seed     uint64   `json:"seed"`
		DataSeed uint64   `json:"data_seed"`
		L        int      `json:"l"`
		M        int      `json:"m"`
		EvalM    int      `json:"eval_m"`
		N        int      `json:"n"`
		Epochs   int      `json:"epochs"`
		Batch    int      `json:"batch"`
		LR       float64  `json:"lr"`
	} `json:"options"`
	Task data.QuadrantConfig `json:"task"`
	// Oracle is the mean max true probability on all M test contexts, and
	// EvalOracle on the EvalM contexts of the curves.
	Oracle      float64         `json:"oracle"`
	EvalOracle  float64         `json:"eval_oracle"`
	Kernels     []*kernelResult `json:"kernels"`
	Figures     []string        `json:"figures"`
	WallSeconds float64         `json:"wall_seconds"`
	Partial     string          `json:"partial,omitempty"` // set when runs of the plan are missing (-merge -partial)
}

// summarise aggregates the runs of one kernel and reads each run's
// learned scalars and, for the TF, its parameter analysis.
func summarise(o Options, kern string, runs []runRecord, stepsPerEpoch int, mapSeed uint64) (*kernelResult, error) {
	kr := &kernelResult{Kernel: kern, Models: map[string]*modelResult{}}
	an := &analysisResult{}
	var qd, qs, ed, es, md, ms []float64
	for _, name := range ModelNames {
		var mine []runRecord
		for _, r := range runs {
			if r.key.Kernel == kern && r.key.Model == name {
				mine = append(mine, r)
			}
		}
		if len(mine) == 0 {
			continue
		}
		mr := &modelResult{}
		var top1, nll, secs, gammas, alphas []float64
		steps := map[int][]train.EpochMetrics{}
		for _, r := range mine {
			top1 = append(top1, r.rec.Final.Top1)
			nll = append(nll, r.rec.Final.NLL)
			secs = append(secs, r.rec.TrainSeconds)
			for _, c := range r.rec.Curve {
				steps[c.Epoch*stepsPerEpoch] = append(steps[c.Epoch*stepsPerEpoch], c)
			}
			m, err := load(o, r.key)
			if err != nil {
				return nil, err
			}
			l, err := m.layer()
			if err != nil {
				return nil, err
			}
			g := l.Heads[0].Gamma
			if kern == "linear" {
				g = math.NaN()
			}
			gammas = append(gammas, g)
			if m.gd != nil {
				// α/N is the scale of the construction's W_V.
				alphas = append(alphas, l.Heads[0].WV.At(data.QuadrantD, data.QuadrantD)*float64(o.N))
			}
			if m.tf != nil {
				a, err := tf.Analyze(m.tf)
				if err != nil {
					return nil, err
				}
				qd, qs = append(qd, a.QDiagonality), append(qs, a.QSpread)
				ed, es = append(ed, a.EDDiagonality), append(es, a.EDSpread)
				me := effectiveMap(l)
				md, ms = append(md, tf.Diagonality(me)), append(ms, tf.DiagonalSpread(me))
				if r.key.Seed == mapSeed {
					an.Q, an.ED, an.MEff, an.Seed = a.Q, a.ED, me, mapSeed
				}
			}
		}
		keys := make([]int, 0, len(steps))
		for s := range steps {
			keys = append(keys, s)
		}
		sort.Ints(keys)
		for _, s := range keys {
			var t, n []float64
			for _, c := range steps[s] {
				t, n = append(t, c.Top1), append(n, c.NLL)
			}
			mr.Curve = append(mr.Curve, curvePoint{Step: s, Top1: sweep.NewStat(t), NLL: sweep.NewStat(n)})
		}
		mr.Top1, mr.NLL, mr.TrainSeconds, mr.Gamma = sweep.NewStat(top1), sweep.NewStat(nll), sweep.NewStat(secs), sweep.NewStat(gammas)
		if alphas != nil {
			st := sweep.NewStat(alphas)
			mr.Alpha = &st
		}
		kr.Models[name] = mr
	}
	if len(qd) > 0 {
		kr.Analysis = an
		kr.Analysis.QDiagonality, kr.Analysis.QSpread = sweep.NewStat(qd), sweep.NewStat(qs)
		kr.Analysis.EDDiagonality, kr.Analysis.EDSpread = sweep.NewStat(ed), sweep.NewStat(es)
		kr.Analysis.MEffDiagonality, kr.Analysis.MEffSpread = sweep.NewStat(md), sweep.NewStat(ms)
	}
	return kr, nil
}

// chooseContext returns the test context to map and its categories: the
// context want if want >= 0, else the first whose quadrants' most probable
// categories (under the true process) take exactly three values, as in the
// paper's Figure 7; the mapped categories are those values in quadrant
// order (at most three).
func chooseContext(st *sets, want int) (int, [4]int, []int, error) {
	pick := func(b int) ([4]int, []int, error) {
		mp, err := st.task.MostProbable(st.testLatent.Cats[4*b : 4*b+4])
		if err != nil {
			return mp, nil, err
		}
		var cats []int
		for _, c := range mp {
			dup := false
			for _, k := range cats {
				dup = dup || k == c
			}
			if !dup && len(cats) < 3 {
				cats = append(cats, c)
			}
		}
		return mp, cats, nil
	}
	if want >= 0 {
		if want >= st.test.B {
			return 0, [4]int{}, nil, fmt.Errorf("-context %d: the test set has %d contexts", want, st.test.B)
		}
		mp, cats, err := pick(want)
		return want, mp, cats, err
	}
	for b := 0; b < st.test.B; b++ {
		mp, cats, err := pick(b)
		if err != nil {
			return 0, mp, nil, err
		}
		distinct := map[int]bool{}
		for _, c := range mp {
			distinct[c] = true
		}
		if len(distinct) == 3 {
			return b, mp, cats, nil
		}
	}
	mp, cats, err := pick(0)
	return 0, mp, cats, err
}

// squareGrid returns the side×side points of [−1, 1]², row 0 at the top
// (x₂ = 1), column 0 at the left (x₁ = −1), row-major (side²×2).
func squareGrid(side int) []float64 {
	out := make([]float64, 0, 2*side*side)
	step := 2 / float64(side-1)
	for r := 0; r < side; r++ {
		for c := 0; c < side; c++ {
			out = append(out, -1+float64(c)*step, 1-float64(r)*step)
		}
	}
	return out
}
