package graph

import (
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"

	"github.com/gdattn/gdattn/internal/bounds"
	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// registry is the parameter table shared by a Scope and all its sub-scopes.
type registry struct {
	g      *G.ExprGraph
	dt     tensor.Dtype
	rng    *rand.Rand
	params map[string]*G.Node
	order  []string // creation order of params
	names  map[string]bool
	consts map[string]*G.Node
	mu     sync.Mutex // see Scope.Lock
}

// Scope creates graph parameters under a hierarchical path ("block0/attn/wq") on
// one Gorgonia expression graph, in one dtype, initialised from one seeded RNG.
//
// Every parameter name is unique within the root scope: asking for a name twice
// is an error unless the second request goes through [Scope.Shared], which
// returns the existing node (after checking its shape). Parameters are listed by
// [Scope.Params] in creation order, which makes initialisation, checkpoints and
// optimiser state deterministic.
//
// A Scope is not safe for concurrent use.
type Scope struct {
	reg    *registry
	path   string
	shared bool
}

// NewScope returns the root scope of a new expression graph holding values of
// dtype dt (tensor.Float32 or tensor.Float64). All initialisers draw from one
// PCG generator seeded with seed.
func NewScope(dt tensor.Dtype, seed uint64) (*Scope, error) {
	if err := CheckDtype(dt); err != nil {
		return nil, err
	}
	return &Scope{reg: &registry{
		g:      G.NewGraph(),
		dt:     dt,
		rng:    rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		params: map[string]*G.Node{},
		names:  map[string]bool{},
		consts: map[string]*G.Node{},
	}}, nil
}

// Sub returns the child scope path/name. name is a relative path: "a/b"
// is s.Sub("a").Sub("b"), empty segments are skipped, so "" is s itself.
func (s *Scope) Sub(name string) *Scope {
	path := s.path
	for _, seg := range strings.Split(name, "/") {
		if seg != "" {
			path = join(path, seg)
		}
	}
	return &Scope{reg: s.reg, path: path, shared: s.shared}
}

// Shared returns a view of s in which Param returns an already existing
// parameter of the same name (and shape) instead of failing. Use it to tie
// weights explicitly, e.g. an output layer tied to the token embedding.
func (s *Scope) Shared() *Scope {
	return &Scope{reg: s.reg, path: s.path, shared: true}
}

// Lock locks the expression graph of s for one user: every scope of the
// graph (its root and all sub-scopes) shares one lock. A graph's input
// nodes, parameters and outputs hold one value each, so two goroutines that
// feed, run and read the same model at the same time would mix each
// other's values; package train holds this lock while a Runner changes
// the graph, feeds and runs a minibatch, or reads the results, so that
// concurrent Predict, Evaluate and Fit calls on one model are serialised
// and each gets its own numbers. Code that feeds and runs a model's
// machines itself should do the same. The lock is not reentrant.
func (s *Scope) Lock() { s.reg.mu.Lock() }

// Unlock unlocks the graph locked by Lock.
func (s *Scope) Unlock() { s.reg.mu.Unlock() }

// Path is the scope's hierarchical path ("" for the root).
func (s *Scope) Path() string { return s.path }

// Graph is the expression graph the scope builds on.
func (s *Scope) Graph() *G.ExprGraph { return s.reg.g }

// Dtype is the dtype of every node the scope creates.
func (s *Scope) Dtype() tensor.Dtype { return s.reg.dt }

// Rand is the scope's seeded generator, shared by the whole scope tree.
func (s *Scope) Rand() *rand.Rand { return s.reg.rng }

// Name returns the full path of name inside s.
func (s *Scope) Name(name string) string { return join(s.path, name) }

func join(path, name string) string {
	if path == "" {
		return name
	}
	return path + "/" + name
}

// Param creates (or, through a Shared scope, returns) the trainable parameter
// s.Path()/name of the given shape, initialised by init (nil means zeros).
// An empty shape (tensor.Shape{}) makes a scalar node; its Value is a *G.F64
// or *G.F32 rather than a tensor, so write it with SetValue and read it with
// Values, which handle both kinds.
func (s *Scope) Param(name string, shape tensor.Shape, init Initializer) (*G.Node, error) {
	full := s.Name(name)
	if name == "" || strings.Contains(name, "/") {
		return nil, fmt.Errorf("graph: parameter name %q: must be non-empty and contain no '/'", name)
	}
	size, err := CheckShape(shape)
	if err != nil {
		return nil, fmt.Errorf("graph: parameter %q: %w", full, err)
	}
	if n, ok := s.reg.params[full]; ok {
		if !s.shared {
			return nil, fmt.Errorf("graph: parameter %q already exists (use Scope.Shared to tie it)", full)
		}
		if !n.Shape().Eq(shape) {
			return nil, fmt.Errorf("graph: shared parameter %q has shape %v, requested %v", full, n.Shape(), shape)
		}
		return n, nil
	}
	if s.reg.names[full] {
		return nil, fmt.Errorf("graph: name %q is already used by a constant", full)
	}
	if init == nil {
		init = Zeros()
	}
	vals := make([]float64, size)
	if err := init(s.reg.rng, shape, vals); err != nil {
		return nil, fmt.Errorf("graph: parameter %q: %w", full, err)
	}
	n, err := s.node(full, shape, vals)
	if err != nil {
		return nil, err
	}
	s.reg.params[full] = n
	s.reg.order = append(s.reg.order, full)
	s.reg.names[full] = true
	return n, nil
}

// Const creates a named, non-trainable tensor node holding values (row-major,
// len = shape.TotalSize()). Use it for the fixed matrices of a construction and
// for constants that take part in broadcasts (Gorgonia needs graph tensors, not
// scalar constants, there). The node is not listed by Params.
func (s *Scope) Const(name string, shape tensor.Shape, values []float64) (*G.Node, error) {
	full := s.Name(name)
	size, err := CheckShape(shape)
	if err != nil {
		return nil, fmt.Errorf("graph: constant %q: %w", full, err)
	}
	if len(values) != size {
		return nil, fmt.Errorf("graph: constant %q: %d values for shape %v", full, len(values), shape)
	}
	if s.reg.names[full] {
		return nil, fmt.Errorf("graph: name %q already exists", full)
	}
	n, err := s.node(full, shape, values)
	if err != nil {
		return nil, err
	}
	s.reg.names[full] = true
	s.reg.consts[full] = n
	return n, nil
}

// Input creates a named, non-trainable input node of the given shape, filled
// with zeros; feed it with SetValue before each run.
func (s *Scope) Input(name string, shape tensor.Shape) (*G.Node, error) {
	size, err := CheckShape(shape)
	if err != nil {
		return nil, fmt.Errorf("graph: input %q: %w", s.Name(name), err)
	}
	return s.Const(name, shape, make([]float64, size))
}

func (s *Scope) node(full string, shape tensor.Shape, vals []float64) (*G.Node, error) {
	if len(shape) == 0 {
		// Gorgonia wants *F64/*F32 values on scalar nodes, not 0-d tensors.
		var v G.Value = G.NewF64(vals[0])
		if s.reg.dt == tensor.Float32 {
			v = G.NewF32(float32(vals[0]))
		}
		return G.NewScalar(s.reg.g, s.reg.dt, G.WithName(full), G.WithValue(v)), nil
	}
	t, err := NewTensor(s.reg.dt, shape, vals)
	if err != nil {
		return nil, fmt.Errorf("graph: %q: %w", full, err)
	}
	return G.NewTensor(s.reg.g, s.reg.dt, len(shape), G.WithShape(shape...), G.WithName(full), G.WithValue(t)), nil
}

// Params lists the trainable parameters created under s (s itself and all its
// sub-scopes), in creation order.
func (s *Scope) Params() G.Nodes {
	var out G.Nodes
	for _, name := range s.reg.order {
		if s.path == "" || name == s.path || strings.HasPrefix(name, s.path+"/") {
			out = append(out, s.reg.params[name])
		}
	}
	return out
}

// ParamNames lists the full names of Params(), in the same order.
func (s *Scope) ParamNames() []string {
	ps := s.Params()
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Name()
	}
	return out
}

// Lookup returns the parameter with the given full path.
func (s *Scope) Lookup(path string) (*G.Node, bool) {
	n, ok := s.reg.params[path]
	return n, ok
}

// SortedParamNames returns all parameter paths of the scope tree sorted
// lexically (handy for stable printing).
func (s *Scope) SortedParamNames() []string {
	out := s.ParamNames()
	sort.Strings(out)
	return out
}

// MaxElements is the largest number of elements a node created by a
// [Scope] or a value made by [NewTensor] may hold: 2^31, that is 8 GiB of
// float32 or 16 GiB of float64 (and as much again for a parameter's
// gradient). Larger shapes are refused before anything is allocated. It is
// gdattn's one per-tensor limit: data.MaxElements is the same constant, and
// the model and layer constructors (packages layers, gd, tf) check every
// tensor of a config against it first, with errors naming the config
// fields, so a config they accept is never refused here.
const MaxElements = bounds.MaxElements

// CheckShape returns the number of elements of shape (1 for a scalar, the
// empty shape) after checking that every dimension is positive and that the
// product of the dimensions is at most [MaxElements]: computed with an
// overflow check, so a shape such as (2^32, 2^32), whose product wraps to
// 0 in tensor.Shape.TotalSize, is refused rather than making an empty
// tensor.
func CheckShape(shape tensor.Shape) (int, error) {
	size := 1
	for _, d := range shape {
		if d <= 0 {
			return 0, fmt.Errorf("invalid shape %v: every dimension must be positive", shape)
		}
		if size > MaxElements/d {
			return 0, fmt.Errorf("shape %v has more than %d elements (graph.MaxElements)", shape, MaxElements)
		}
		size *= d
	}
	return size, nil
}
