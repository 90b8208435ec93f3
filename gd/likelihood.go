package gd

import (
	"fmt"

	"github.com/gdattn/gdattn/losses"
	G "gorgonia.org/gorgonia"
)

// Likelihood is the observation model p(y | f) whose context
// log-likelihood the GD models ascend, a value of Config like the kernel.
// For a likelihood of the exponential family in its natural parameter f,
// −∂/∂f log p(y | f) = E(t(Y) | f) − t(y), so K steps of functional GD are
//
//	f_{j,k+1} = f_{j,k} + (α/N) Σ_i [t(y_i) − E(t(Y) | f_{i,k})] κ(x_i, x_j),   f_{j,0} = 0,
//
// for every likelihood; only t(y) and the mean E(t(Y) | f) change:
//
//   - [Categorical] (the default, Config.Likelihood nil): y is a class,
//     t(y) = w_{e,y} (a column of the learned W_e) and E(w_e | f) is
//     Σ_c w_{e,c} softmax_c(W_eᵀ f) — the encoder, the erase head and the
//     cross-attention against W_e of Section 3 build it, and the query's f
//     feeds the softmax head.
//   - [Gaussian] (Appendix G): y ∈ R^{d_y} (d_y = Config.DPrime),
//     t(y) = y and E(Y | f) = f, so the erase step subtracts f itself: no
//     W_e, no cross-attention, and the prediction at the query is f_K.
//
// A user supplies another real-valued likelihood by implementing
// [RealLikelihood] (the structured construction then uses its mean; see
// there). Only the two built-ins can be saved.
type Likelihood interface {
	// Name is the likelihood's name in configs: "categorical", "gaussian"
	// or a user likelihood's own.
	Name() string
}

// RealLikelihood is a likelihood for real-valued targets y ∈ R^{d'} whose
// sufficient statistic is y itself, t(y) = y, with natural parameter f ∈
// R^{d'}. What it must provide:
//
//   - Mean, the mean function E(Y | f) as graph code, applied row-wise to a
//     node of shape (B, N, d') and returning the same shape; it must be
//     differentiable in f (the models train through it). Gaussian: f.
//   - MeanValues, the same function in plain Go on one d'-vector (written
//     into dst, len(dst) == len(f)); gd.ReferenceReal uses it as the ground
//     truth the graph must match.
//   - Loss, the training loss of the query from f (B, d') and y (B, d'):
//     a scalar node proportional to the mean over the B queries of
//     −log p(y | f) up to a constant (the runner trains on it). Gaussian:
//     the mean squared error.
//
// The model's prediction at the query is Mean(f_K).
type RealLikelihood interface {
	Likelihood
	Mean(f *G.Node) (*G.Node, error)
	MeanValues(dst, f []float64)
	Loss(f, y *G.Node) (*G.Node, error)
}

// Likelihood names in configs.
const (
	LikelihoodCategorical = "categorical"
	LikelihoodGaussian    = "gaussian"
)

type categorical struct{}

// Categorical returns the categorical likelihood, the default: a Config
// whose Likelihood is nil or Categorical() builds the same model.
func Categorical() Likelihood { return categorical{} }

func (categorical) Name() string { return LikelihoodCategorical }

type gaussian struct{}

// Gaussian returns the Gaussian likelihood of Appendix G with unit
// variance, p(y | f) = N(y; f, I): Mean is the identity, MeanValues copies
// f, and Loss is the mean squared error of the query, mean over the B·d'
// entries of (f − y)² (losses.MSE; the NLL up to the factor 2/d' and a
// constant, so its minimiser and the GD update are those of the NLL).
func Gaussian() RealLikelihood { return gaussian{} }

func (gaussian) Name() string                       { return LikelihoodGaussian }
func (gaussian) Mean(f *G.Node) (*G.Node, error)    { return f, nil }
func (gaussian) MeanValues(dst, f []float64)        { copy(dst, f) }
func (gaussian) Loss(f, y *G.Node) (*G.Node, error) { return losses.MSE(f, y) }

// isCategorical reports whether l is the categorical likelihood (nil or
// Categorical()).
func isCategorical(l Likelihood) bool {
	_, ok := l.(categorical)
	return l == nil || ok
}

// isGaussian reports whether l is the built-in Gaussian likelihood.
func isGaussian(l Likelihood) bool {
	_, ok := l.(gaussian)
	return ok
}

// ParseLikelihood returns the built-in likelihood called name:
// "categorical" (also "") or "gaussian".
func ParseLikelihood(name string) (Likelihood, error) {
	switch name {
	case "", LikelihoodCategorical:
		return Categorical(), nil
	case LikelihoodGaussian:
		return Gaussian(), nil
	}
	return nil, fmt.Errorf("gd: unknown likelihood %q (want \"categorical\" or \"gaussian\")", name)
}

// LikelihoodName is the name of cfg's likelihood ("categorical" for nil).
func (cfg Config) LikelihoodName() string {
	if cfg.Likelihood == nil {
		return LikelihoodCategorical
	}
	return cfg.Likelihood.Name()
}

// Real reports whether cfg's likelihood is real-valued (Gaussian or a user
// RealLikelihood) rather than categorical.
func (cfg Config) Real() bool { return !isCategorical(cfg.Likelihood) }
