package cuda

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"unsafe"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// Exec implements graph.DeviceUpdater: a train.Trainer on a machine built
// with NewExecutor makes its Adam/AdamW updates on the device (unless
// train.Config.HostOptimizer), with the moments resident in device memory
// (allocated zeroed at the first use: float64, or with
// SetParamDtypeMoments float32 for float32 parameters), and the updated
// parameters copied back into their host values (unless
// ExecOptions.ResidentParams). With ExecOptions.DeviceGrads it is also a
// graph.DeviceStepper: RunStep runs the program, the gradients' statistics,
// the clipping factor, the NaN/Inf guard and the update, and waits for the
// device once.
var (
	_ graph.DeviceUpdater = (*Exec)(nil)
	_ graph.ParamChecker  = (*Exec)(nil)
	_ graph.MomentDtyper  = (*Exec)(nil)
	_ graph.DeviceStepper = (*Exec)(nil)
)

// updState is the executor's optimiser and statistics state on the device.
//
// Every device update and every statistics pass is a fixed number of
// launches, whatever the number of parameters (multi-tensor kernels,
// kernels/adam.cu and kernels/gradstats.cu): one grad_part_warp per
// gradient dtype, one grad_join_warp when a gradient has several parts, one
// step_finish, one adam_multi per (parameter dtype, moment dtype) group.
type updState struct {
	m32   bool     // float32 moments for float32 parameters
	mom   [][2]Ptr // per parameter: its moments (0 until allocated)
	momF4 []bool   // per parameter: its moments are float32

	// block holds the step's numbers, read back in one copy: ctl (4
	// doubles: scale, skip, norm, loss), then stats (2 per parameter, in
	// statOrder), then bad (1 per parameter, by parameter index).
	block Ptr

	groups []adamGroup // nil until built (moments allocated)
	wd     Ptr         // per parameter: its weight decay (uploaded when it changes)
	wdHost []float64   // what wd holds
	// hyp holds the update's per-step numbers (step size lr/bc1,
	// 1/sqrt(bc2), lr), uploaded before each update: adam_multi reads
	// them from device memory, so a captured step replays unchanged.
	hyp     Ptr
	hypHost []float64 // its own allocation: cgo refuses pointers into a struct holding Go pointers
	gen     int       // bumped each time groups is built (the graph key)

	stat *statPlan // nil until built

	// host is the step block's host copy, reused by every step (the
	// copies to and from the device always use the same host memory).
	host []float64
}

// Step block layout (doubles).
const (
	ctlScale = iota
	ctlSkip
	ctlNorm
	ctlLoss
	ctlLen
)

func (x *Exec) statsOff() Ptr { return Ptr(ctlLen * 8) }
func (x *Exec) badOff() Ptr   { return Ptr((ctlLen + 2*len(x.prog.Params)) * 8) }
func (x *Exec) blockLen() int { return ctlLen + 3*len(x.prog.Params) }

// adamGroup is one adam_multi launch: the parameters of one dtype whose
// moments have one dtype.
type adamGroup struct {
	kernel string
	np     int
	n      int64 // elements
	tab    Ptr
}

// statPlan is the reduction tree of the gradients' statistics: the parts
// (grad_part_warp, warps of a gradient), then, if a gradient has several,
// one warp per gradient joining them (grad_join_warp).
type statPlan struct {
	order []int       // position k of the statistics → parameter index
	parts []statGroup // the parts, one launch per gradient dtype
	off   Ptr         // the parts' offsets, np+1 long long
	join  bool        // some gradient has more than one part
	buf   Ptr         // the parts' pairs when join (else they go to the step block)
}

// statGroup is one grad_part_warp launch.
type statGroup struct {
	kernel string
	np     int
	n      int64 // items
	base   int64 // first item in the level
	tab    Ptr
}

// Statistics of the gradients: grad_part_warp gives a gradient of size
// elements statWarps(size) warps (each summing at least statPerWarp
// elements, at most statMaxWarps warps: a join warp's lanes add at most
// statMaxWarps/32 parts each).
const (
	statPerWarp  = 512
	statMaxWarps = 2048
)

// statWarps is the number of grad_part_warp warps for a gradient of size
// elements.
func statWarps(size int) int {
	return max(1, min(size/statPerWarp, statMaxWarps))
}

// UpdatesOnDevice reports whether the executor makes the Trainer's updates
// on the device: always, except with ExecOptions.HostOnly.
func (x *Exec) UpdatesOnDevice() bool { return !x.opts.HostOnly }

// StepsOnDevice reports whether RunStep is available: with
// ExecOptions.DeviceGrads (not HostOnly) on a program with a scalar loss.
func (x *Exec) StepsOnDevice() bool {
	if x.opts.HostOnly || !x.opts.DeviceGrads || x.prog.Loss == nil {
		return false
	}
	lv := x.byNode[x.prog.Loss]
	return lv != nil && lv.size == 1 && (lv.dt == tensor.Float32 || lv.dt == tensor.Float64)
}

// SetParamDtypeMoments makes the moments of float32 parameters float32
// (on) or float64 (off, the default); float64 parameters keep float64
// moments. Moments that exist already are converted (rounded to float32
// when turning it on).
func (x *Exec) SetParamDtypeMoments(on bool) error {
	if x.closed {
		return errors.New("cuda: executor is closed")
	}
	u := &x.upd
	if on == u.m32 {
		return nil
	}
	type saved struct {
		i    int
		m, v []float64
	}
	var keep []saved
	for i := range u.mom {
		if u.mom[i][0] == 0 {
			continue
		}
		n := x.byNode[x.prog.Params[i]].size
		s := saved{i: i, m: make([]float64, n), v: make([]float64, n)}
		if err := x.Moments(i, s.m, s.v); err != nil {
			return err
		}
		keep = append(keep, s)
	}
	for i := range u.mom {
		bytes := int64(x.byNode[x.prog.Params[i]].size) * 8
		if u.momF4[i] {
			bytes /= 2
		}
		for k, p := range u.mom[i] {
			if p != 0 {
				if err := x.freeAlloc(p, bytes); err != nil {
					return err
				}
				u.mom[i][k] = 0
			}
		}
	}
	u.m32, u.groups = on, nil
	for _, s := range keep {
		if err := x.SetMoments(s.i, s.m, s.v); err != nil {
			return err
		}
	}
	return nil
}

// freeAlloc frees one allocation of bytes made by alloc.
func (x *Exec) freeAlloc(p Ptr, bytes int64) error {
	i := slices.Index(x.allocs, p)
	if i < 0 {
		return fmt.Errorf("cuda: free of %#x, not an allocation of the executor", uintptr(p))
	}
	x.allocs = slices.Delete(x.allocs, i, i+1)
	x.bytes -= bytes
	return x.b.Free(p)
}

// momentF4 reports whether parameter i's moments are float32.
func (x *Exec) momentF4(i int) bool {
	return x.upd.m32 && x.byNode[x.prog.Params[i]].dt == tensor.Float32
}

// moments returns the device moment buffers of parameter i, allocating
// zeroed ones the first time, and whether they are float32.
func (x *Exec) moments(i int) (Ptr, Ptr, bool, error) {
	if i < 0 || i >= len(x.prog.Params) {
		return 0, 0, false, fmt.Errorf("cuda: parameter %d of %d", i, len(x.prog.Params))
	}
	u := &x.upd
	if u.mom == nil {
		u.mom = make([][2]Ptr, len(x.prog.Params))
		u.momF4 = make([]bool, len(x.prog.Params))
	}
	if u.mom[i][0] != 0 {
		return u.mom[i][0], u.mom[i][1], u.momF4[i], nil
	}
	f4 := x.momentF4(i)
	bytes := int64(x.byNode[x.prog.Params[i]].size) * 8
	if f4 {
		bytes /= 2
	}
	for k := range u.mom[i] {
		p, err := x.alloc(bytes)
		if err != nil {
			return 0, 0, false, err
		}
		if err := x.b.Zero(p, bytes); err != nil {
			return 0, 0, false, err
		}
		u.mom[i][k] = p
	}
	u.momF4[i] = f4
	u.groups = nil
	return u.mom[i][0], u.mom[i][1], f4, nil
}

// MomentBytes returns the device memory the Adam moments hold (0 before
// the first update or SetMoments).
func (x *Exec) MomentBytes() int64 {
	var b int64
	for i, mv := range x.upd.mom {
		if mv[0] != 0 {
			n := int64(x.byNode[x.prog.Params[i]].size) * 16
			if x.upd.momF4[i] {
				n /= 2
			}
			b += n
		}
	}
	return b
}

// uploadTable copies a table of long long into a new device allocation.
func (x *Exec) uploadTable(tab []int64) (Ptr, error) {
	p, err := x.alloc(int64(len(tab)) * 8)
	if err != nil {
		return 0, err
	}
	if len(tab) > 0 {
		if err := x.b.CopyHtoD(p, unsafe.Pointer(&tab[0]), int64(len(tab))*8); err != nil {
			return 0, err
		}
	}
	return p, nil
}

// ensureBlock allocates the step block.
func (x *Exec) ensureBlock() error {
	if x.upd.block != 0 {
		return nil
	}
	p, err := x.alloc(int64(x.blockLen()) * 8)
	if err != nil {
		return err
	}
	if err := x.b.Zero(p, int64(x.blockLen())*8); err != nil {
		return err
	}
	x.upd.block = p
	x.upd.host = make([]float64, x.blockLen())
	return nil
}

// ensureGroups allocates the moments and builds the adam_multi tables.
func (x *Exec) ensureGroups() error {
	u := &x.upd
	for i := range x.prog.Params {
		if _, _, _, err := x.moments(i); err != nil {
			return err
		}
	}
	if u.groups != nil {
		return nil
	}
	type key struct {
		dt tensor.Dtype
		f4 bool
	}
	var keys []key
	members := map[key][]int{}
	for i, p := range x.prog.Params {
		pv, gv := x.byNode[p], x.byNode[x.prog.Grads[i]]
		if pv.size != gv.size || pv.dt != gv.dt {
			return fmt.Errorf("cuda: device update of %q: gradient has %d %v elements, parameter %d %v", p.Name(), gv.size, gv.dt, pv.size, pv.dt)
		}
		if pv.dt != tensor.Float32 && pv.dt != tensor.Float64 {
			return fmt.Errorf("cuda: device update of %q: dtype %v", p.Name(), pv.dt)
		}
		k := key{pv.dt, u.momF4[i]}
		if _, ok := members[k]; !ok {
			keys = append(keys, k)
		}
		members[k] = append(members[k], i)
	}
	groups := []adamGroup{}
	for _, k := range keys {
		idx := members[k]
		np := len(idx)
		tab := make([]int64, 6*np+1)
		for j, i := range idx {
			pv, gv := x.byNode[x.prog.Params[i]], x.byNode[x.prog.Grads[i]]
			tab[j+1] = tab[j] + int64(pv.size)
			tab[np+1+j] = int64(pv.ptr)
			tab[2*np+1+j] = int64(gv.ptr)
			tab[3*np+1+j] = int64(u.mom[i][0])
			tab[4*np+1+j] = int64(u.mom[i][1])
			tab[5*np+1+j] = int64(i)
		}
		p, err := x.uploadTable(tab)
		if err != nil {
			return err
		}
		name := "adam_multi_m64" + suffix(k.dt)
		if k.f4 {
			name = "adam_multi_m32_f32"
		}
		groups = append(groups, adamGroup{kernel: name, np: np, n: tab[np], tab: p})
	}
	u.groups = groups
	u.gen++
	return nil
}

// uploadAdam uploads what the update reads from device memory: the
// weight decays (when they change) and the step's hyp numbers. It comes
// before the update's launches and outside any capture.
func (x *Exec) uploadAdam(u graph.AdamUpdate) error {
	if len(u.WeightDecay) != len(x.prog.Params) {
		return fmt.Errorf("%d weight decays for %d parameters", len(u.WeightDecay), len(x.prog.Params))
	}
	s := &x.upd
	if s.wd == 0 {
		p, err := x.alloc(int64(max(1, len(x.prog.Params))) * 8)
		if err != nil {
			return err
		}
		s.wd = p
	}
	if s.hyp == 0 {
		s.hypHost = make([]float64, 3)
		p, err := x.alloc(int64(len(s.hypHost)) * 8)
		if err != nil {
			return err
		}
		s.hyp = p
	}
	if !slices.Equal(s.wdHost, u.WeightDecay) {
		if len(u.WeightDecay) > 0 {
			if err := x.b.CopyHtoD(s.wd, unsafe.Pointer(&u.WeightDecay[0]), int64(len(u.WeightDecay))*8); err != nil {
				return err
			}
		}
		s.wdHost = slices.Clone(u.WeightDecay)
	}
	s.hypHost[0], s.hypHost[1], s.hypHost[2] = u.LR/u.BC1, 1/math.Sqrt(u.BC2), u.LR
	return x.b.CopyHtoD(s.hyp, unsafe.Pointer(&s.hypHost[0]), int64(len(s.hypHost))*8)
}

// launchAdam queues the update of every parameter (uploadAdam first); the
// gradient scale and the skip flag are read from the step block's ctl.
func (x *Exec) launchAdam(u graph.AdamUpdate) error {
	s := &x.upd
	dec := int32(0)
	if u.Decoupled {
		dec = 1
	}
	for _, g := range s.groups {
		if err := x.b.Launch(g.kernel, g.n, g.n, int32(g.np), g.tab, u.Beta1, u.Beta2, u.Eps,
			s.hyp, dec, s.wd, s.block, s.block+x.badOff()); err != nil {
			return err
		}
	}
	return nil
}

// AdamUpdate applies one update (graph.AdamUpdate) to every parameter from
// the gradients of the last Run, then copies the parameters to the host
// (unless ExecOptions.ResidentParams).
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
	if err := x.ensureBlock(); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
	}
	ctl := x.upd.host[:2]
	ctl[ctlScale], ctl[ctlSkip] = u.GradScale, 0
	if err := x.b.CopyHtoD(x.upd.block, unsafe.Pointer(&ctl[0]), 16); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
	}
	if err := x.b.Zero(x.upd.block+x.badOff(), int64(len(x.prog.Params))*8); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
	}
	if err := x.ensureGroups(); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
	}
	if err := x.uploadAdam(u); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
	}
	if err := x.launchAdam(u); err != nil {
		return fmt.Errorf("cuda: device update: %w", err)
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

// RunStep runs the program and one update (graph.DeviceStepper): the
// gradients' statistics, the clipping factor and the NaN/Inf guard are
// computed on the device and the update reads them there, so the step
// waits for the device once, then reads the step block (the statistics,
// the update's non-finite counts and the loss) in one copy. The loss and
// the outputs are bound to their nodes as after Run; without
// ExecOptions.ResidentParams the updated parameters are then copied to
// their host values.
func (x *Exec) RunStep(u graph.AdamUpdate, clipNorm float64) (graph.StepReport, error) {
	var rep graph.StepReport
	if !x.StepsOnDevice() {
		return rep, errors.New("cuda: RunStep needs ExecOptions.DeviceGrads and a scalar loss")
	}
	if !(clipNorm >= 0) || math.IsInf(clipNorm, 0) {
		return rep, fmt.Errorf("cuda: RunStep: clip norm %v: want a finite value >= 0", clipNorm)
	}
	if len(u.WeightDecay) != len(x.prog.Params) {
		return rep, fmt.Errorf("cuda: RunStep: %d weight decays for %d parameters", len(u.WeightDecay), len(x.prog.Params))
	}
	if err := x.ensureBlock(); err != nil {
		return rep, fmt.Errorf("cuda: RunStep: %w", err)
	}
	if err := x.ensureGroups(); err != nil {
		return rep, fmt.Errorf("cuda: RunStep: %w", err)
	}
	if err := x.ensureStatPlan(); err != nil {
		return rep, fmt.Errorf("cuda: RunStep: %w", err)
	}
	if err := x.uploadInputs(); err != nil {
		return rep, err
	}
	lv := x.byNode[x.prog.Loss]
	np := len(x.prog.Params)
	blk := x.upd.block
	if err := x.uploadAdam(u); err != nil {
		return rep, fmt.Errorf("cuda: RunStep: update: %w", err)
	}
	if err := x.stepLaunches(lv, clipNorm, u); err != nil {
		return rep, err
	}
	if err := x.b.Sync(); err != nil {
		return rep, fmt.Errorf("cuda: %w", err)
	}
	out := x.upd.host
	if err := x.b.CopyDtoH(unsafe.Pointer(&out[0]), blk, int64(len(out))*8); err != nil {
		return rep, fmt.Errorf("cuda: RunStep: %w", err)
	}
	if err := x.bindStep(lv, out[ctlLoss]); err != nil {
		return rep, err
	}
	x.ran = true
	x.runs++
	rep.Scale, rep.Norm, rep.Skipped = out[ctlScale], out[ctlNorm], out[ctlSkip] != 0
	rep.Stats = x.unpermute(out[ctlLen : ctlLen+2*np])
	rep.NonFinite = make([]int, np)
	for i, b := range out[ctlLen+2*np:] {
		rep.NonFinite[i] = int(b)
	}
	if rep.Skipped {
		return rep, nil
	}
	if x.opts.ResidentParams {
		x.devNewer = true
		return rep, nil
	}
	return rep, x.downloadParams()
}

// bindStep binds the loss (read back in the step block: loss) and the
// other values Run downloads; when the loss is the only one, no copy is
// needed.
func (x *Exec) bindStep(lv *value, loss float64) error {
	if len(x.read) != 1 || x.read[0] != lv || x.prog.Trace {
		return x.download()
	}
	if lv.host == nil {
		lv.host = newHostValue(lv.dt, lv.shape)
	}
	f32, f64 := float32(loss), loss
	src := unsafe.Pointer(&f64)
	if lv.dt == tensor.Float32 {
		src = unsafe.Pointer(&f32)
	}
	p, n, err := hostBytes(lv.host)
	if err != nil || n != lv.bytes {
		return x.download()
	}
	copy(unsafe.Slice((*byte)(p), n), unsafe.Slice((*byte)(src), n))
	if err := G.UnsafeLet(lv.n, lv.host); err != nil {
		return fmt.Errorf("cuda: bind %q: %w", lv.n.Name(), err)
	}
	return nil
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
// the first update) into m and v; float32 moments are converted exactly.
func (x *Exec) Moments(i int, m, v []float64) error {
	if x.closed {
		return errors.New("cuda: executor is closed")
	}
	mp, vp, f4, err := x.moments(i)
	if err != nil {
		return err
	}
	n := x.byNode[x.prog.Params[i]].size
	if len(m) != n || len(v) != n {
		return fmt.Errorf("cuda: moments of parameter %d: %d and %d values, want %d", i, len(m), len(v), n)
	}
	if !f4 {
		if err := x.b.CopyDtoH(unsafe.Pointer(&m[0]), mp, int64(n)*8); err != nil {
			return err
		}
		return x.b.CopyDtoH(unsafe.Pointer(&v[0]), vp, int64(n)*8)
	}
	buf := make([]float32, n)
	for _, c := range []struct {
		p   Ptr
		dst []float64
	}{{mp, m}, {vp, v}} {
		if err := x.b.CopyDtoH(unsafe.Pointer(&buf[0]), c.p, int64(n)*4); err != nil {
			return err
		}
		for j, b := range buf {
			c.dst[j] = float64(b)
		}
	}
	return nil
}

// SetMoments uploads the moments of parameter i (rounded to float32 for
// float32 moments).
func (x *Exec) SetMoments(i int, m, v []float64) error {
	if x.closed {
		return errors.New("cuda: executor is closed")
	}
	mp, vp, f4, err := x.moments(i)
	if err != nil {
		return err
	}
	n := x.byNode[x.prog.Params[i]].size
	if len(m) != n || len(v) != n {
		return fmt.Errorf("cuda: moments of parameter %d: %d and %d values, want %d", i, len(m), len(v), n)
	}
	if !f4 {
		if err := x.b.CopyHtoD(mp, unsafe.Pointer(&m[0]), int64(n)*8); err != nil {
			return err
		}
		return x.b.CopyHtoD(vp, unsafe.Pointer(&v[0]), int64(n)*8)
	}
	buf := make([]float32, n)
	for _, c := range []struct {
		p   Ptr
		src []float64
	}{{mp, m}, {vp, v}} {
		for j, s := range c.src {
			buf[j] = float32(s)
		}
		if err := x.b.CopyHtoD(c.p, unsafe.Pointer(&buf[0]), int64(n)*4); err != nil {
			return err
		}
	}
	return nil
}

// ensureStatPlan builds the reduction tree of the gradients' statistics:
// the parts' tables (one per gradient dtype; the statistics' order puts the
// float32 gradients first when the dtypes are mixed, else it is the
// parameters' order), their offsets and, when a gradient has several
// parts, the parts' buffer.
func (x *Exec) ensureStatPlan() error {
	if x.upd.stat != nil {
		return nil
	}
	if err := x.ensureBlock(); err != nil {
		return err
	}
	np := len(x.prog.Params)
	sp := &statPlan{}
	for _, dt := range []tensor.Dtype{tensor.Float32, tensor.Float64} {
		for i := range x.prog.Params {
			if x.byNode[x.prog.Grads[i]].dt == dt {
				sp.order = append(sp.order, i)
			}
		}
	}
	if len(sp.order) != np {
		return errors.New("gradients must be float32 or float64")
	}
	off := make([]int64, np+1)
	for k, i := range sp.order {
		off[k+1] = off[k] + int64(statWarps(x.byNode[x.prog.Grads[i]].size))
	}
	sp.join = off[np] > int64(np)
	var err error
	if sp.off, err = x.uploadTable(off); err != nil {
		return err
	}
	// The parts per dtype: items [base, base+n) of the parts.
	for k := 0; k < np; {
		dt := x.byNode[x.prog.Grads[sp.order[k]]].dt
		e := k
		for e < np && x.byNode[x.prog.Grads[sp.order[e]]].dt == dt {
			e++
		}
		m := e - k
		tab := make([]int64, 3*m+1)
		for j := range m {
			gv := x.byNode[x.prog.Grads[sp.order[k+j]]]
			tab[j+1] = tab[j] + off[k+j+1] - off[k+j]
			tab[m+1+j] = int64(gv.size)
			tab[2*m+1+j] = int64(gv.ptr)
		}
		p, err := x.uploadTable(tab)
		if err != nil {
			return err
		}
		sp.parts = append(sp.parts, statGroup{kernel: "grad_part_warp" + suffix(dt), np: m, n: tab[m], base: off[k], tab: p})
		k = e
	}
	if sp.join {
		if sp.buf, err = x.alloc(off[np] * 16); err != nil {
			return err
		}
	}
	x.upd.stat = sp
	return nil
}

// launchStats queues the statistics of every gradient into the step
// block's stats.
func (x *Exec) launchStats() error {
	sp := x.upd.stat
	np := int64(len(x.prog.Params))
	stats := x.upd.block + x.statsOff()
	parts := stats
	if sp.join {
		parts = sp.buf
	}
	for _, g := range sp.parts {
		if err := x.b.Launch(g.kernel, g.n, g.n, int32(g.np), g.tab, parts+Ptr(16*g.base)); err != nil {
			return err
		}
	}
	if sp.join {
		return x.b.Launch("grad_join_warp", np, np, sp.off, sp.buf, stats)
	}
	return nil
}

// unpermute turns the stats pairs (in statOrder) into one GradStat per
// parameter.
func (x *Exec) unpermute(pairs []float64) []graph.GradStat {
	stats := make([]graph.GradStat, len(x.prog.Params))
	for k, i := range x.upd.stat.order {
		stats[i] = graph.GradStat{SumSq: pairs[2*k], NonFinite: int(pairs[2*k+1])}
	}
	return stats
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
	np := len(x.prog.Params)
	if np == 0 {
		return nil, true, nil
	}
	if err := x.ensureStatPlan(); err != nil {
		return nil, false, fmt.Errorf("cuda: gradient statistics: %w", err)
	}
	if err := x.launchStats(); err != nil {
		return nil, false, fmt.Errorf("cuda: gradient statistics: %w", err)
	}
	out := x.upd.host[ctlLen : ctlLen+2*np]
	if err := x.b.CopyDtoH(unsafe.Pointer(&out[0]), x.upd.block+x.statsOff(), int64(len(out))*8); err != nil {
		return nil, false, fmt.Errorf("cuda: gradient statistics: %w", err)
	}
	return x.unpermute(out), true, nil
}

// NonFiniteParams returns, after a device update that left the parameters
// resident (ExecOptions.ResidentParams), the number of NaN and ±Inf values
// the update wrote into each parameter, counted by the update kernel
// ([graph.ParamChecker]); ok is false when the host values are the current
// ones.
func (x *Exec) NonFiniteParams() ([]int, bool, error) {
	if !x.devNewer || x.upd.block == 0 {
		return nil, false, nil
	}
	if x.closed {
		return nil, false, errors.New("cuda: executor is closed")
	}
	np := len(x.prog.Params)
	if np == 0 {
		return nil, true, nil
	}
	bad := x.upd.host[ctlLen+2*np:]
	if err := x.b.CopyDtoH(unsafe.Pointer(&bad[0]), x.upd.block+x.badOff(), int64(np)*8); err != nil {
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
