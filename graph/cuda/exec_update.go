package cuda

import (
	"errors"
	"fmt"
	"math"
	"unsafe"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
)

// Exec implements graph.DeviceUpdater: a train.Trainer on a machine built
// with NewExecutor makes its Adam/AdamW updates on the device (unless
// train.Config.HostOptimizer), with float64 moments resident in device memory
// (allocated zeroed at the first update), and the updated parameters copied
// back into their host values.
var _ graph.DeviceUpdater = (*Exec)(nil)

// UpdatesOnDevice reports whether the executor makes the Trainer's updates
// on the device: always, except with ExecOptions.HostOnly.
func (x *Exec) UpdatesOnDevice() bool { return !x.opts.HostOnly }

// moments returns the device moment buffers of parameter i, allocating
// zeroed ones the first time.
func (x *Exec) moments(i int) (Ptr, Ptr, error) {
	if i < 0 || i >= len(x.prog.Params) {
		return 0, 0, fmt.Errorf("cuda: parameter %d of %d", i, len(x.prog.Params))
	}
	if x.mom == nil {
		x.mom = make([][2]Ptr, len(x.prog.Params))
	}
	if x.mom[i][0] != 0 {
		return x.mom[i][0], x.mom[i][1], nil
	}
	bytes := int64(x.byNode[x.prog.Params[i]].size) * 8
	for k := range x.mom[i] {
		p, err := x.alloc(bytes)
		if err != nil {
			return 0, 0, err
		}
		if err := x.b.Zero(p, bytes); err != nil {
			return 0, 0, err
		}
		x.mom[i][k] = p
	}
	return x.mom[i][0], x.mom[i][1], nil
}

// AdamUpdate applies one update (graph.AdamUpdate) to every parameter from
// the gradients of the last Run, then copies the parameters to the host.
func (x *Exec) AdamUpdate(u graph.AdamUpdate) error {
	if x.closed {
		return errors.New("cuda: executor is closed")
	}
	if !x.ran {
		return errors.New("cuda: device update before the first Run")
	}
	if len(u.WeightDecay) != len(x.prog.Params) {
		return fmt.Errorf("cuda: device update: %d weight decays for %d parameters", len(u.WeightDecay), len(x.prog.Params))
	}
	if x.badCount == 0 {
		var err error
		if x.badCount, err = x.alloc(int64(len(x.prog.Params)) * 8); err != nil {
			return fmt.Errorf("cuda: device update: %w", err)
		}
	}
	if err := x.b.Zero(x.badCount, int64(len(x.prog.Params))*8); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
	}
	for i, p := range x.prog.Params {
		pv, gv := x.byNode[p], x.byNode[x.prog.Grads[i]]
		if pv.size != gv.size || pv.dt != gv.dt {
			return fmt.Errorf("cuda: device update of %q: gradient has %d %v elements, parameter %d %v", p.Name(), gv.size, gv.dt, pv.size, pv.dt)
		}
		m, v, err := x.moments(i)
		if err != nil {
			return err
		}
		l2, keep := 0.0, 1.0
		if wd := u.WeightDecay[i]; wd != 0 {
			if u.Decoupled {
				keep = 1 - u.LR*wd
			} else {
				l2 = wd
			}
		}
		if err := x.launch(pv, "adam_update", int64(pv.size), pv.ptr, gv.ptr, m, v, u.Beta1, u.Beta2, u.Eps,
			u.LR/u.BC1, 1/math.Sqrt(u.BC2), keep, l2, u.GradScale, x.badCount+Ptr(8*i)); err != nil {
			return fmt.Errorf("cuda: device update of %q: %w", p.Name(), err)
		}
	}
	if err := x.b.Sync(); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
	}
	if x.opts.ResidentParams {
		x.devNewer = true
		return nil
	}
	return x.downloadParams()
}

// SyncParams copies the machine's parameters from the device into their
// host values (needed only with ExecOptions.ResidentParams).
func (x *Exec) SyncParams() error {
	if x.closed {
		return errors.New("cuda: executor is closed")
	}
	if !x.devNewer {
		return nil // the device holds nothing newer than the host
	}
	return x.downloadParams()
}

// downloadParams copies the parameters into their host values.
func (x *Exec) downloadParams() error {
	for _, p := range x.prog.Params {
		hv := p.Value()
		if hv == nil {
			return fmt.Errorf("cuda: parameter %q has no host value", p.Name())
		}
		if err := x.copyOut(x.byNode[p], hv); err != nil {
			return fmt.Errorf("cuda: download of %q: %w", p.Name(), err)
		}
	}
	return nil
}

// InvalidateParams makes the next Run upload the parameters from their host
// values (with ExecOptions.ResidentParams, after writing them on the host).
func (x *Exec) InvalidateParams() { x.devNewer = false }

// Moments copies the first and second moments of parameter i (zeros before
// the first update) into m and v.
func (x *Exec) Moments(i int, m, v []float64) error {
	mp, vp, err := x.moments(i)
	if err != nil {
		return err
	}
	n := x.byNode[x.prog.Params[i]].size
	if len(m) != n || len(v) != n {
		return fmt.Errorf("cuda: moments of parameter %d: %d and %d values, want %d", i, len(m), len(v), n)
	}
	if err := x.b.CopyDtoH(unsafe.Pointer(&m[0]), mp, int64(n)*8); err != nil {
		return err
	}
	return x.b.CopyDtoH(unsafe.Pointer(&v[0]), vp, int64(n)*8)
}

// SetMoments uploads the moments of parameter i.
func (x *Exec) SetMoments(i int, m, v []float64) error {
	mp, vp, err := x.moments(i)
	if err != nil {
		return err
	}
	n := x.byNode[x.prog.Params[i]].size
	if len(m) != n || len(v) != n {
		return fmt.Errorf("cuda: moments of parameter %d: %d and %d values, want %d", i, len(m), len(v), n)
	}
	if err := x.b.CopyHtoD(mp, unsafe.Pointer(&m[0]), int64(n)*8); err != nil {
		return err
	}
	return x.b.CopyHtoD(vp, unsafe.Pointer(&v[0]), int64(n)*8)
}

// Statistics of a tensor (sum of squares, non-finite count): grad_part
// with statChunks(size) items, each summing the elements j ≡ item (mod
// chunks) (neighbouring items read neighbouring elements, and enough of them
// to keep the GPU's memory busy), then grad_join levels, each with a 32nd
// as many items as parts left (item i summing the parts ≡ i), until one
// item sums at most 32 parts. The order of every sum is fixed by the size:
// the same numbers every run.
const (
	statMaxChunks = 1 << 18 // grad_part items at most
	statFan       = 32      // parts a grad_join item sums, about
)

// statChunks is the number of grad_part items for a tensor of size
// elements: one per 16 elements, at least 1, at most statMaxChunks.
func statChunks(size int) int {
	return max(1, min(size/16, statMaxChunks))
}

// stats computes on the device the sum of squares and the number of
// non-finite elements of each of vs (at most one per parameter) and returns
// them, two float64 per value.
func (x *Exec) stats(vs []*value) ([]float64, error) {
	if len(vs) > len(x.prog.Params) {
		return nil, fmt.Errorf("statistics of %d tensors, room for %d", len(vs), len(x.prog.Params))
	}
	// Two halves of statPart take the levels' parts in turn.
	half := Ptr(statMaxChunks * 16)
	if x.statPart == 0 {
		var err error
		if x.statPart, err = x.alloc(2 * statMaxChunks * 16); err != nil {
			return nil, err
		}
		if x.statOut, err = x.alloc(int64(len(x.prog.Params)) * 16); err != nil {
			x.statPart = 0
			return nil, err
		}
	}
	for i, v := range vs {
		parts := int64(statChunks(v.size))
		if err := x.launch(v, "grad_part", parts, int64(v.size), v.ptr, x.statPart); err != nil {
			return nil, err
		}
		src, dst := x.statPart, x.statPart+half
		for parts > statFan {
			items := (parts + statFan - 1) / statFan
			if err := x.b.Launch("grad_join", items, items, int32(parts), src, dst); err != nil {
				return nil, err
			}
			parts, src, dst = items, dst, src
		}
		if err := x.b.Launch("grad_join", 1, int64(1), int32(parts), src, x.statOut+Ptr(16*i)); err != nil {
			return nil, err
		}
	}
	out := make([]float64, 2*len(vs))
	if len(vs) == 0 {
		return out, nil
	}
	if err := x.b.CopyDtoH(unsafe.Pointer(&out[0]), x.statOut, int64(len(out))*8); err != nil {
		return nil, err
	}
	return out, nil
}

// GradStats returns, with ExecOptions.DeviceGrads, the sum of squares and
// the number of NaN/±Inf elements of each parameter's gradient of the last
// Run, computed on the device (ok false without DeviceGrads: the gradients
// are on the host).
func (x *Exec) GradStats() ([]graph.GradStat, bool, error) {
	if !x.opts.DeviceGrads || x.opts.HostOnly {
		return nil, false, nil
	}
	if x.closed {
		return nil, false, errors.New("cuda: executor is closed")
	}
	if !x.ran {
		return nil, false, errors.New("cuda: gradient statistics before the first Run")
	}
	vs := make([]*value, len(x.prog.Params))
	for i := range x.prog.Params {
		vs[i] = x.byNode[x.prog.Grads[i]]
	}
	out, err := x.stats(vs)
	if err != nil {
		return nil, false, fmt.Errorf("cuda: gradient statistics: %w", err)
	}
	stats := make([]graph.GradStat, len(vs))
	for i := range stats {
		stats[i] = graph.GradStat{SumSq: out[2*i], NonFinite: int(out[2*i+1])}
	}
	return stats, true, nil
}

// NonFiniteParams returns, after a device update that left the parameters
// resident (ExecOptions.ResidentParams), the number of NaN and ±Inf values
// the update wrote into each parameter, counted by the update kernel
// ([graph.ParamChecker]); ok is false when the host values are the current
// ones.
func (x *Exec) NonFiniteParams() ([]int, bool, error) {
	if !x.devNewer || x.badCount == 0 {
		return nil, false, nil
	}
	if x.closed {
		return nil, false, errors.New("cuda: executor is closed")
	}
	np := len(x.prog.Params)
	if np == 0 {
		return nil, true, nil
	}
	bad := make([]float64, np)
	if err := x.b.CopyDtoH(unsafe.Pointer(&bad[0]), x.badCount, int64(np)*8); err != nil {
		return nil, false, fmt.Errorf("cuda: parameter check: %w", err)
	}
	counts := make([]int, np)
	for i, b := range bad {
		counts[i] = int(b)
	}
	return counts, true, nil
}

// SyncGrads downloads the gradients of the last Run so that p.Grad() reads
// them (needed only with ExecOptions.DeviceGrads).
func (x *Exec) SyncGrads() error {
	if x.closed {
		return errors.New("cuda: executor is closed")
	}
	if !x.ran {
		return errors.New("cuda: SyncGrads before the first Run")
	}
	for _, gn := range x.prog.Grads {
		v := x.byNode[gn]
		if v.host == nil {
			v.host = newHostValue(v.dt, v.shape)
		}
		if err := x.copyOut(v, v.host); err != nil {
			return fmt.Errorf("cuda: download %q: %w", gn.Name(), err)
		}
		if err := G.UnsafeLet(gn, v.host); err != nil {
			return fmt.Errorf("cuda: bind %q: %w", gn.Name(), err)
		}
	}
	return x.bindGrads()
}
