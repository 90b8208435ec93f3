package graph

// DeviceUpdater is implemented by a [Machine]'s executor that can apply the
// optimiser's Adam/AdamW update where its parameters live (graph/cuda's
// executor does, on the GPU). The trainer (package train) reads the loss
// and the gradients' statistics (GradStats, or the gradients themselves) on
// the host for its NaN/Inf guard and the clipping norm, unless the updater
// is also a [DeviceStepper], which does both on the device; the moments
// live on the device and the update writes the new
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

// MomentDtyper is implemented by a [DeviceUpdater] that can keep Adam's
// moments in each parameter's dtype (float32 moments for float32
// parameters), as the host optimiser does with train.Config's
// ParamDtypeMoments: each new moment is computed in float64 from the stored
// one and rounded when stored; Moments and SetMoments still speak float64.
// The trainer calls SetParamDtypeMoments once, before its first update.
type MomentDtyper interface {
	SetParamDtypeMoments(on bool) error
}

// DeviceStepper is implemented by a [DeviceUpdater] that runs a whole
// training step on the device and waits for it once: the forward and
// backward run, the gradients' statistics, the clipping factor, the NaN/Inf
// guard and the update, with the step's numbers read back together at the
// end.
type DeviceStepper interface {
	// StepsOnDevice reports whether RunStep is available (graph/cuda's
	// executor: with its gradients kept on the device).
	StepsOnDevice() bool
	// RunStep runs the machine's program (binding the loss and outputs as
	// Run does) and then the update u (its GradScale ignored), clipping the
	// gradients to global norm clipNorm (0: no clipping). The update is
	// skipped, on the device, when the loss or a gradient element is NaN or
	// ±Inf, or when clipNorm > 0 and the gradients' squared norm overflows;
	// the report says so and why.
	RunStep(u AdamUpdate, clipNorm float64) (StepReport, error)
}

// StepReport is what a [DeviceStepper] reads back after a step.
type StepReport struct {
	// Stats summarises each parameter's gradient (aligned with
	// Machine.Params).
	Stats []GradStat
	// Norm is the gradients' global norm (the square root of the sums of
	// squares added in parameter order) and Scale the factor the update
	// multiplied every gradient by (clipNorm/Norm when clipping, else 1).
	Norm, Scale float64
	// Skipped says the update wrote nothing (see RunStep).
	Skipped bool
	// NonFinite counts, for each parameter, the NaN and ±Inf values the
	// update wrote (all zero when Skipped).
	NonFinite []int
}
