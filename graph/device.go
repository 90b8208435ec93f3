package graph

// DeviceUpdater is implemented by a [Machine]'s executor that can apply the
// optimiser's Adam/AdamW update where its parameters live (graph/cuda's
// executor does, on the GPU). The trainer (package train) still reads the
// loss and the gradients on the host for its NaN/Inf guard and the clipping
// norm; the moments then live on the device and the update writes the new
// parameter values back into the parameters' host values (or, for an
// executor keeping them resident, on SyncParams), so checkpoints and later
// runs see them exactly as after a host update.
//
// It lives here, beside [Executor], so that a device backend implements it
// importing only graph.
type DeviceUpdater interface {
	// UpdatesOnDevice reports whether the updater can make the updates
	// (an executor running everything on the host says false).
	UpdatesOnDevice() bool
	// AdamUpdate applies one update to every parameter of the machine
	// (aligned with Machine.Params) from the gradients of the last Run.
	AdamUpdate(u AdamUpdate) error
	// Moments copies the first and second moments of parameter i into m
	// and v (each of the parameter's size).
	Moments(i int, m, v []float64) error
	// SetMoments replaces the moments of parameter i.
	SetMoments(i int, m, v []float64) error
	// SyncParams copies the parameters to their host values, for updaters
	// that leave them on the device (a no-op for those that copy them back
	// after each update).
	SyncParams() error
	// GradStats summarises the gradients of the last Run, one GradStat per
	// parameter, when they stay on the device (ok true); with ok false the
	// trainer reads the gradients on the host instead.
	GradStats() (stats []GradStat, ok bool, err error)
}

// ParamChecker is implemented by a [DeviceUpdater] that may keep the
// parameters on the device after an update (graph/cuda's executor with
// resident parameters): NonFiniteParams counts, for each parameter (aligned
// with Machine.Params), its NaN and ±Inf elements where the last update left
// them. With ok false the parameters' host values are the current ones and
// the trainer checks those instead.
type ParamChecker interface {
	NonFiniteParams() (counts []int, ok bool, err error)
}

// GradStat summarises one parameter's gradient kept on a device: the sum of
// the squares of its finite elements and the number of NaN or ±Inf ones.
type GradStat struct {
	SumSq     float64
	NonFinite int
}

// AdamUpdate holds the constants of one Adam/AdamW update made by a
// [DeviceUpdater], which computes in float64 what the host update computes:
//
//	g' = GradScale*g + wd*w            (Adam's L2 penalty, unless Decoupled)
//	m  = Beta1*m + (1-Beta1)*g'
//	v  = Beta2*v + (1-Beta2)*g'^2
//	w  = w - LR*wd*w                   (AdamW: Decoupled)
//	w  = w - LR * (m/BC1) / (sqrt(v/BC2) + Eps)
//
// with wd = WeightDecay[i] for parameter i.
type AdamUpdate struct {
	LR, Beta1, Beta2, Eps float64
	// BC1 and BC2 are the bias corrections 1-Beta1^t and 1-Beta2^t.
	BC1, BC2  float64
	Decoupled bool
	// WeightDecay is the decay of each parameter (0: none).
	WeightDecay []float64
	// GradScale multiplies every gradient (the clipping factor; 1 when
	// the gradients are not clipped).
	GradScale float64
}
