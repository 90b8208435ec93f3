package train

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
)

// The concerns of [Trainer.Step], in the order it runs them: the forward and
// backward run and its loss (runLoss); the gradients' statistics, from the
// device or from host views of the gradients, each with the NaN/Inf guard
// (gradients, deviceGradNorm, hostGrads); then, on the host, the clipping
// scale, the Adam hyperparameters, the update guard and the update
// (hostUpdate); on a device, deviceUpdate (trainer.go).

// runLoss runs the machine and returns the loss; a failed run or a NaN or
// ±Inf loss is an error (NaN, or the loss, returned with it).
func (t *Trainer) runLoss(n int) (float64, error) {
	if err := t.m.Run(); err != nil {
		return math.NaN(), fmt.Errorf("train: step %d: %w", n, err)
	}
	loss, err := graph.Scalar(t.m.Loss())
	if err != nil {
		return math.NaN(), fmt.Errorf("train: step %d: loss: %w", n, err)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("train: step %d: loss is %v; parameters not updated", n, loss)
	}
	return loss, nil
}

// gradients checks the step's gradients: with the device's statistics where
// it computes them, returning the gradients' global norm; otherwise from
// host views, which it collects in t.grads, returning -1.
func (t *Trainer) gradients(n int) (float64, error) {
	if t.dev != nil {
		norm, err := t.deviceGradNorm(n)
		if err != nil || norm >= 0 {
			return norm, err
		}
	}
	return -1, t.hostGrads(n)
}

// deviceGradNorm returns the gradients' global norm from the device's
// per-parameter statistics, or -1 if the device does not compute them. A
// NaN/Inf element, or a squared norm that overflows when clipping needs it,
// is an error.
func (t *Trainer) deviceGradNorm(n int) (float64, error) {
	stats, ok, err := t.dev.GradStats()
	if err != nil {
		return -1, fmt.Errorf("train: step %d: gradient statistics: %w", n, err)
	}
	if !ok {
		return -1, nil
	}
	return t.checkGradStats(n, stats)
}

// checkGradStats is the NaN/Inf guard on the gradients' statistics; it
// returns their global norm (the square root of the sums of squares added
// in parameter order).
func (t *Trainer) checkGradStats(n int, stats []graph.GradStat) (float64, error) {
	if len(stats) != len(t.params) {
		return -1, fmt.Errorf("train: step %d: %d gradient statistics for %d parameters", n, len(stats), len(t.params))
	}
	ssq := 0.0
	for i, st := range stats {
		if st.NonFinite > 0 {
			return -1, fmt.Errorf("train: step %d: gradient of %q has %d NaN/Inf elements; parameters not updated", n, t.names[i], st.NonFinite)
		}
		ssq += st.SumSq
	}
	norm := math.Sqrt(ssq)
	if math.IsInf(norm, 0) && t.cfg.ClipNorm > 0 {
		return -1, fmt.Errorf("train: step %d: the gradients' squared norm overflows float64; parameters not updated", n)
	}
	return norm, nil
}

// hostGrads collects host views of every parameter's gradient in t.grads;
// a gradient of the wrong size or with a NaN/Inf element is an error that
// names the parameter and the element.
func (t *Trainer) hostGrads(n int) error {
	t.grads = t.grads[:0]
	for _, p := range t.params {
		gv, err := p.Grad()
		if err != nil {
			return fmt.Errorf("train: step %d: gradient of %q: %w", n, p.Name(), err)
		}
		f32, f64, err := valueView(gv)
		if err == nil && len(f32)+len(f64) != p.Shape().TotalSize() {
			err = fmt.Errorf("has %d elements, want %d", len(f32)+len(f64), p.Shape().TotalSize())
		}
		if err != nil {
			return fmt.Errorf("train: step %d: gradient of %q: %w", n, p.Name(), err)
		}
		j, v := firstNonFinite(f32), 0.0
		if f32 == nil {
			j = firstNonFinite(f64)
		}
		if j >= 0 {
			if f32 != nil {
				v = float64(f32[j])
			} else {
				v = f64[j]
			}
			return fmt.Errorf("train: step %d: gradient of %q is %v at element %d; parameters not updated", n, p.Name(), v, j)
		}
		t.grads = append(t.grads, gradView{f32: f32, f64: f64})
	}
	return nil
}

// hostUpdate applies one clipped Adam(W) update to the host parameters
// from t.grads, after checking that no parameter or moment would become
// non-finite; on error nothing is written.
func (t *Trainer) hostUpdate(n int, lr float64) error {
	f32s, f64s, err := t.paramViews(n)
	if err != nil {
		return err
	}
	gmax, scale := t.clipScale()
	hyper := t.adamHypers(n, lr)
	if err := t.guardUpdate(n, f32s, f64s, gmax, scale, hyper); err != nil {
		return err
	}
	for i := range t.params {
		if f64s[i] != nil {
			t.mmax[i], t.vmax[i] = updateView(f64s[i], t.grads[i], scale, t.mv[i], hyper(i))
		} else {
			t.mmax[i], t.vmax[i] = updateView(f32s[i], t.grads[i], scale, t.mv[i], hyper(i))
		}
	}
	return nil
}

// paramViews fetches every parameter's host view before any is written,
// so a failure leaves all parameters untouched. Views are fetched anew each
// step: SetValue on a scalar parameter rebinds its value.
func (t *Trainer) paramViews(n int) ([][]float32, [][]float64, error) {
	f32s := make([][]float32, len(t.params))
	f64s := make([][]float64, len(t.params))
	for i, p := range t.params {
		f32, f64, err := valueView(p.Value())
		if err == nil && len(f32)+len(f64) != t.grads[i].len() {
			err = fmt.Errorf("has %d elements, gradient has %d", len(f32)+len(f64), t.grads[i].len())
		}
		if err != nil {
			return nil, nil, fmt.Errorf("train: step %d: parameter %q: %w", n, p.Name(), err)
		}
		f32s[i], f64s[i] = f32, f64
	}
	return f32s, f64s, nil
}

// clipScale returns the bound gmax on every |g| after clipping (the
// gradients' global norm, or ClipNorm if smaller) and the factor the
// update multiplies each gradient element by as it reads it
// (ClipGlobalNorm's clipping).
func (t *Trainer) clipScale() (gmax, scale float64) {
	gmax, scale = globalNorm(t.grads), 1.0
	if c := t.cfg.ClipNorm; c > 0 && gmax > c {
		scale = c / gmax
		gmax = c
	}
	return gmax, scale
}

// adamHypers returns the Adam(W) hyperparameters of step n for parameter i
// (weight decay only for the parameters that decay).
func (t *Trainer) adamHypers(n int, lr float64) func(i int) adamHyper {
	h := adamHyper{
		lr: lr, beta1: t.cfg.Beta1, beta2: t.cfg.Beta2, eps: t.cfg.Eps,
		bc1:       1 - math.Pow(t.cfg.Beta1, float64(n)),
		bc2:       1 - math.Pow(t.cfg.Beta2, float64(n)),
		decoupled: t.decouple,
	}
	return func(i int) adamHyper {
		hi := h
		if t.decay[i] {
			hi.wd = t.cfg.WeightDecay
		}
		return hi
	}
}

// guardUpdate checks every parameter's update before any is written. A
// cheap bound clears almost every update; where it cannot, the exact update
// is computed without writing (checkView).
func (t *Trainer) guardUpdate(n int, f32s [][]float32, f64s [][]float64, gmax, scale float64, hyper func(int) adamHyper) error {
	for i := range t.params {
		hi := hyper(i)
		var j int
		var what string
		mlimit := math.MaxFloat64
		if t.mv[i].m32 != nil {
			mlimit = math.MaxFloat32
		}
		if f64s[i] != nil {
			if updateBounded(maxAbs64(f64s[i]), gmax, t.mmax[i], t.vmax[i], hi, math.MaxFloat64, mlimit) {
				continue
			}
			j, what = checkView(f64s[i], t.grads[i], scale, t.mv[i], hi)
		} else {
			if updateBounded(maxAbs32(f32s[i]), gmax, t.mmax[i], t.vmax[i], hi, math.MaxFloat32, mlimit) {
				continue
			}
			j, what = checkView(f32s[i], t.grads[i], scale, t.mv[i], hi)
		}
		if j >= 0 {
			return fmt.Errorf("train: step %d: the update would make the %s of %q non-finite at element %d (learning rate %v, weight decay %v); parameters and moments not updated", n, what, t.names[i], j, hi.lr, hi.wd)
		}
	}
	return nil
}

// deviceHypers returns the device update of step n with learning rate lr
// (GradScale 1).
func (t *Trainer) deviceHypers(n int, lr float64) graph.AdamUpdate {
	u := graph.AdamUpdate{
		LR: lr, Beta1: t.cfg.Beta1, Beta2: t.cfg.Beta2, Eps: t.cfg.Eps,
		BC1:       1 - math.Pow(t.cfg.Beta1, float64(n)),
		BC2:       1 - math.Pow(t.cfg.Beta2, float64(n)),
		Decoupled: t.decouple, GradScale: 1,
		WeightDecay: make([]float64, len(t.params)),
	}
	for i := range t.params {
		if t.decay[i] {
			u.WeightDecay[i] = t.cfg.WeightDecay
		}
	}
	return u
}

// deviceStep makes step n with learning rate lr as one device step
// ([graph.DeviceStepper]): the device runs the program, computes the
// gradients' statistics, the clipping factor and the guard, and updates
// the parameters unless the guard fails, then reports; the errors are
// those of the host path (runLoss, deviceGradNorm, deviceUpdate).
func (t *Trainer) deviceStep(ds graph.DeviceStepper, n int, lr float64) (float64, error) {
	rep, err := ds.RunStep(t.deviceHypers(n, lr), t.cfg.ClipNorm)
	if err != nil {
		return math.NaN(), fmt.Errorf("train: step %d: %w", n, err)
	}
	loss, err := graph.Scalar(t.m.Loss())
	if err != nil {
		return math.NaN(), fmt.Errorf("train: step %d: loss: %w", n, err)
	}
	if math.IsNaN(loss) || math.IsInf(loss, 0) {
		return loss, fmt.Errorf("train: step %d: loss is %v; parameters not updated", n, loss)
	}
	if _, err := t.checkGradStats(n, rep.Stats); err != nil {
		return loss, err
	}
	if rep.Skipped {
		return loss, fmt.Errorf("train: step %d: the device skipped the update (gradient norm %v); parameters not updated", n, rep.Norm)
	}
	return loss, t.checkDeviceCounts(n, lr, rep.NonFinite)
}

// checkDeviceCounts checks the device's counts of the non-finite values
// its update wrote into each parameter; any is an error that stops the
// trainer (the device moments cannot be rolled back).
func (t *Trainer) checkDeviceCounts(n int, lr float64, counts []int) error {
	if len(counts) != len(t.params) {
		return fmt.Errorf("train: step %d: %d parameter checks for %d parameters", n, len(counts), len(t.params))
	}
	for i, c := range counts {
		if c > 0 {
			t.broken = fmt.Errorf("train: step %d: the device update made %d elements of %q non-finite (learning rate %v); the device moments cannot be rolled back: restore a checkpoint", n, c, t.names[i], lr)
			return t.broken
		}
	}
	return nil
}
