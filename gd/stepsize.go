package gd

import (
	"fmt"
	"math"

	"github.com/gdattn/gdattn/graph"
)

// StepSize returns α, the model's GD step size: exp(log_alpha) from the
// parameter's current value (the learned α), or Cfg.Alpha with FixedAlpha.
// It reads the host value, so it needs no run of the graph; after training
// on a device, the trainer's SyncParams (which Fit and Evaluate call) brings
// the value back first.
func (m *Model) StepSize() (float64, error) {
	if m.Cfg.FixedAlpha {
		return m.Cfg.Alpha, nil
	}
	p, ok := m.s.Lookup(m.s.Name("log_alpha"))
	if !ok {
		return 0, fmt.Errorf("gd: step size: no parameter %q", m.s.Name("log_alpha"))
	}
	v, err := graph.Scalar(p)
	if err != nil {
		return 0, fmt.Errorf("gd: step size: %w", err)
	}
	return math.Exp(v), nil
}
