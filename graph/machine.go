package graph

import (
	"errors"
	"fmt"
	"runtime"
	"strings"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// MachineOptions configures [NewMachine]. The zero value means the
// documented defaults.
type MachineOptions struct {
	// Params are the parameters the loss is differentiated with respect to;
	// their gradients are kept after each Run (read them with
	// [GradValues] or n.Grad()). Nil means s.Params(). Every one must be a
	// parameter of the scope's graph that the loss depends on.
	Params G.Nodes
	// NoGrad compiles a forward-only machine: no gradient nodes are added
	// to the graph and none are computed.
	NoGrad bool
	// Outputs, when non-empty on a NoGrad machine, restricts the compiled
	// program to what the loss (if any) and Outputs depend on, so an
	// evaluation machine on a graph that already holds gradient nodes does
	// not compute them. A gradient machine (without Trace) always compiles
	// only what the loss, the gradients and Outputs depend on: list in
	// Outputs any other node whose value you read after Run.
	Outputs G.Nodes
	// Trace keeps a copy of every node's value after Run (Gorgonia's
	// TraceExec). Without it the register allocator reuses the memory of
	// intermediate nodes once nothing later reads them, so only inputs,
	// parameters, the loss, Outputs and nodes still needed at the end hold
	// meaningful values after Run. With Trace a gradient machine compiles
	// the whole graph. Slower; meant for tests and inspection.
	Trace bool
	// Executor, when non-nil, runs the compiled program instead of
	// Gorgonia's TapeMachine (nil, the default): NewMachine still adds the
	// gradient nodes, sorts the program and hands it to the factory as a
	// [Program]; Run then calls the executor, which must leave the loss,
	// Outputs, the parameters' gradients (and, with Trace, every node)
	// readable on the host as the TapeMachine does. graph/cuda provides one
	// that runs the program on a GPU (cuda.NewExecutor).
	//
	// Without Executor (and without Trace) the program runs on the host
	// executor (see [NewHostExecutor]): the same ops in the same order as
	// Gorgonia's TapeMachine, the same values bit for bit, but each
	// intermediate node keeps its buffer from one Run to the next instead
	// of allocating it again, and reshapes are views.
	Executor ExecutorFactory
	// TapeMachine runs the program on Gorgonia's TapeMachine instead of
	// the host executor (Trace always does).
	TapeMachine bool
	// ReuseGrads lets the host executor write each Run's gradients into the
	// buffers of the previous Run's, as it does for intermediate nodes,
	// instead of allocating them afresh: a gradient value read after one
	// Run is overwritten by the next. For a caller that reads the gradients
	// before the next Run and keeps no copy across Runs (train.Trainer
	// does): it saves an allocation the size of every gradient per Run (a
	// (V, d') table's gradient for a language model). The values are the
	// same bit for bit; the TapeMachine and other executors ignore it.
	ReuseGrads bool
}

// Program is the compiled program a [Machine] hands to an [ExecutorFactory].
type Program struct {
	// Graph is the graph being run (a subgraph for a forward-only machine
	// restricted to Outputs).
	Graph *G.ExprGraph
	// Nodes are Graph's nodes in execution order: every node comes after
	// the nodes it reads.
	Nodes G.Nodes
	// Loss is the scalar loss (nil when the machine has none).
	Loss *G.Node
	// Params are the parameters with gradients and Grads their gradient
	// nodes, aligned (both nil on a forward-only machine). After Run the
	// gradient of Params[i] must be readable with Params[i].Grad(): write
	// it into the parameter's dual value when it has one (a TapeMachine
	// built on the same graph binds them), else bind Grads[i]'s value.
	Params, Grads G.Nodes
	// Outputs are nodes the caller reads after Run (MachineOptions.Outputs;
	// for a gradient machine too).
	Outputs G.Nodes
	// Trace asks for every node's value to be readable after Run.
	Trace bool
	// ReuseGrads is MachineOptions.ReuseGrads: an executor may overwrite
	// the gradients of one Run in the next.
	ReuseGrads bool
}

// Executor runs a [Program]. Run executes it once with the current values of
// the graph's input and parameter nodes; Close releases its resources.
type Executor interface {
	Run() error
	Close() error
}

// ExecutorFactory builds the [Executor] of a program; see
// MachineOptions.Executor.
type ExecutorFactory func(p *Program) (Executor, error)

// Machine is a compiled program for one graph, reused across minibatches:
// feed inputs with [SetValue], call Run, read node values (with [Values],
// [Scalar], [GradValues]) until the next Run. It is the only way gdattn runs
// graphs (Gorgonia's LispMachine and solvers are not used). By default the
// program runs on the host executor ([NewHostExecutor]): Gorgonia's ops in
// the order Gorgonia's TapeMachine runs them, with the same values bit for
// bit, but with every intermediate node's buffer kept from one Run to the
// next. With MachineOptions.TapeMachine or Trace it runs on Gorgonia's
// TapeMachine; with MachineOptions.Executor on another executor (graph/cuda's
// runs it on a GPU). The values callers read after Run are the same.
//
// A gradient machine adds the gradient nodes of loss with respect to its
// parameters to the graph once, when it is created; n.Grad() of each
// parameter holds d loss / d param after Run (on the TapeMachine through
// bound dual values). Gradients do not accumulate across runs.
//
// The loss, MachineOptions.Outputs and the gradients get new values each
// Run, so a value kept from an earlier Run stays as it was; the values of
// other intermediate nodes are overwritten by the next Run.
//
// A Machine is not safe for concurrent use, and two machines on the same
// graph must not run at the same time (they share node values).
type Machine struct {
	s      *Scope
	vm     G.VM
	exec   Executor  // non-nil when MachineOptions.Executor ran the program
	host   *hostExec // the default host executor
	loss   *G.Node
	params G.Nodes
	grads  G.Nodes // gradient nodes, aligned with params; nil if forward only
	ran    bool
	closed bool
}

// NewMachine compiles the scope's graph into a program. If loss is
// non-nil, opts.NoGrad is false and there are parameters, it first adds the
// gradient nodes of loss with respect to the parameters (G.Grad, called once
// per graph: a second gradient machine for the same loss reuses them). loss
// must then be a scalar node of s's graph.
//
// Errors: a non-scalar loss, a parameter the loss does not depend on, a
// parameter from another graph, gradients already built on this graph for a
// different loss, and Gorgonia failures while differentiating or compiling
// (Gorgonia reports those by panicking; they are returned as errors).
func NewMachine(s *Scope, loss *G.Node, opts MachineOptions) (*Machine, error) {
	if s == nil {
		return nil, errors.New("graph: machine: scope is nil")
	}
	g := s.Graph()
	m := &Machine{s: s, loss: loss}
	if loss != nil && loss.Graph() != g {
		return nil, fmt.Errorf("graph: machine: loss %q belongs to another graph", loss.Name())
	}
	for _, n := range opts.Outputs {
		if n == nil || n.Graph() != g {
			return nil, fmt.Errorf("graph: machine: output %v is nil or belongs to another graph", n)
		}
	}
	params := opts.Params
	if params == nil {
		params = s.Params()
	}
	if loss != nil && !opts.NoGrad && len(params) > 0 {
		grads, err := gradients(s, loss, params)
		if err != nil {
			return nil, err
		}
		m.grads = grads
		m.params = append(G.Nodes(nil), params...)
	}

	prog := g
	switch {
	case m.grads != nil && !opts.Trace:
		// Only what the loss, the gradients and Outputs depend on: nodes
		// the loss does not use (an unused token block, another machine's
		// gradient nodes) are not computed.
		roots := append(G.Nodes{loss}, m.grads...)
		roots = append(roots, opts.Outputs...)
		prog = g.ExactSubgraphRoots(roots...)
	case m.grads == nil && len(opts.Outputs) > 0:
		roots := append(G.Nodes(nil), opts.Outputs...)
		if loss != nil {
			roots = append(roots, loss)
		}
		prog = g.ExactSubgraphRoots(roots...)
	}
	if opts.Executor != nil {
		if err := m.newExecutor(prog, opts); err != nil {
			return nil, err
		}
		return m, nil
	}
	if !opts.Trace && !opts.TapeMachine {
		p, err := m.program(prog, opts)
		if err != nil {
			return nil, err
		}
		if m.host, err = newHostExec(p); err != nil {
			return nil, fmt.Errorf("graph: machine: %w", err)
		}
		return m, nil
	}
	var vmOpts []G.VMOpt
	if opts.Trace {
		vmOpts = append(vmOpts, G.TraceExec())
	}
	if m.grads != nil {
		vmOpts = append(vmOpts, G.BindDualValues(m.params...))
	}
	if err := gorgoniaCall("compile", func() { m.vm = G.NewTapeMachine(prog, vmOpts...) }); err != nil {
		return nil, fmt.Errorf("graph: machine: %w", err)
	}
	return m, nil
}

// newExecutor sorts prog and hands it to opts.Executor.
func (m *Machine) newExecutor(prog *G.ExprGraph, opts MachineOptions) error {
	p, err := m.program(prog, opts)
	if err != nil {
		return err
	}
	ex, err := opts.Executor(p)
	if err != nil {
		return fmt.Errorf("graph: machine: executor: %w", err)
	}
	if ex == nil {
		return errors.New("graph: machine: executor factory returned nil")
	}
	m.exec = ex
	return nil
}

// program sorts prog into the [Program] an executor runs.
func (m *Machine) program(prog *G.ExprGraph, opts MachineOptions) (*Program, error) {
	var sorted G.Nodes
	if err := gorgoniaCall("sort", func() {
		var err error
		if sorted, err = G.Sort(prog); err != nil {
			panic(err)
		}
	}); err != nil {
		return nil, fmt.Errorf("graph: machine: %w", err)
	}
	// G.Sort lists every node before the nodes it reads.
	order := make(G.Nodes, len(sorted))
	for i, n := range sorted {
		order[len(sorted)-1-i] = n
	}
	p := &Program{Graph: prog, Nodes: order, Loss: m.loss, Trace: opts.Trace, ReuseGrads: opts.ReuseGrads,
		Outputs: append(G.Nodes(nil), opts.Outputs...)}
	if m.grads != nil {
		p.Params = append(G.Nodes(nil), m.params...)
		p.Grads = append(G.Nodes(nil), m.grads...)
	}
	return p, nil
}

// Executor returns the executor of MachineOptions.Executor, nil when the
// machine runs on the host executor or Gorgonia's TapeMachine.
func (m *Machine) Executor() Executor { return m.exec }

// gradients returns the gradient nodes of loss with respect to params,
// adding them to the graph unless an earlier machine already did.
func gradients(s *Scope, loss *G.Node, params G.Nodes) (G.Nodes, error) {
	if !loss.IsScalar() {
		return nil, fmt.Errorf("graph: machine: loss %q has shape %v, want a scalar", loss.Name(), loss.Shape())
	}
	g := s.Graph()
	reach := g.ExactSubgraphRoots(loss)
	var unused []string
	for i, p := range params {
		if p == nil || p.Graph() != g {
			return nil, fmt.Errorf("graph: machine: parameter %d (%v) is nil or belongs to another graph", i, p)
		}
		if !p.IsVar() {
			return nil, fmt.Errorf("graph: machine: %q is not a parameter (it is computed by %v)", p.Name(), p.Op())
		}
		if !reach.Has(p.ID()) {
			unused = append(unused, p.Name())
		}
	}
	if len(unused) > 0 {
		return nil, fmt.Errorf("graph: machine: loss %q does not depend on parameter(s) %q (set MachineOptions.Params to train a subset)", loss.Name(), unused)
	}
	if loss.Deriv() != nil {
		// An earlier machine differentiated this loss: reuse its gradient
		// nodes rather than differentiating the graph a second time.
		grads := make(G.Nodes, len(params))
		for i, p := range params {
			if grads[i] = p.Deriv(); grads[i] == nil {
				return nil, fmt.Errorf("graph: machine: the graph's gradients of %q were built without parameter %q; build a new graph", loss.Name(), p.Name())
			}
		}
		return grads, nil
	}
	// G.Grad skips nodes that already have a gradient node, so a parameter
	// differentiated for another loss would silently keep that loss's
	// gradient.
	for _, p := range params {
		if p.Deriv() != nil {
			return nil, fmt.Errorf("graph: machine: parameter %q already has a gradient for another loss; one graph supports one differentiated loss", p.Name())
		}
	}
	var grads G.Nodes
	err := gorgoniaCall("gradient", func() {
		var err error
		if grads, err = G.Grad(loss, params...); err != nil {
			panic(err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("graph: machine: gradient of %q: %w", loss.Name(), err)
	}
	if len(grads) != len(params) {
		return nil, fmt.Errorf("graph: machine: gradient of %q: got %d gradient nodes for %d parameters", loss.Name(), len(grads), len(params))
	}
	return grads, nil
}

// gorgoniaCall runs f, turning a Gorgonia panic into an error: Gorgonia
// reports bad graphs (and failed compilations) by panicking with an error or
// a string. Runtime errors (nil dereferences, index out of range) are bugs
// and are re-panicked, as in [Recover].
func gorgoniaCall(what string, f func()) (err error) {
	defer func() {
		r := recover()
		if r == nil {
			return
		}
		switch v := r.(type) {
		case runtime.Error:
			panic(v)
		case error:
			err = fmt.Errorf("%s: %w", what, v)
		default:
			err = fmt.Errorf("%s: gorgonia panicked: %v", what, v)
		}
	}()
	f()
	return nil
}

// Run executes the compiled program once: it resets the previous run, zeroes
// the parameter gradients and runs every instruction. Afterwards the values of
// the graph's nodes (and the parameters' gradients) stay readable until the
// next Run. If an op fails the error names it, e.g.
//
//	graph: run: op A × B (node "A × B(%0, %1)"): ... Shape mismatch ...
//
// Panics raised by Gorgonia on the calling goroutine are returned as errors;
// a panic inside an op itself happens on Gorgonia's worker goroutine and
// cannot be recovered.
func (m *Machine) Run() error {
	if m.closed {
		return errors.New("graph: run: machine is closed")
	}
	if m.exec != nil {
		if err := m.exec.Run(); err != nil {
			return fmt.Errorf("graph: run: %w", err)
		}
		m.ran = true
		return nil
	}
	if m.host != nil {
		var runErr error
		if err := gorgoniaCall("run", func() { runErr = m.host.Run() }); err != nil {
			return fmt.Errorf("graph: %w", err)
		}
		m.ran = true
		if runErr != nil {
			return fmt.Errorf("graph: run: %w", runErr)
		}
		return nil
	}
	if m.ran {
		m.vm.Reset()
	}
	if err := m.zeroGrads(); err != nil {
		return err
	}
	var runErr error
	if err := gorgoniaCall("run", func() { runErr = m.vm.RunAll() }); err != nil {
		return fmt.Errorf("graph: %w", err)
	}
	m.ran = true
	if runErr != nil {
		var ce interface{ Node() *G.Node }
		if errors.As(runErr, &ce) && ce.Node() != nil {
			n := ce.Node()
			return fmt.Errorf("graph: run: op %v (node %q): %w", n.Op(), n.Name(), runErr)
		}
		return fmt.Errorf("graph: run: %w", runErr)
	}
	return nil
}

// zeroGrads clears the gradients held by the parameters' dual values, which
// Gorgonia's tape machine otherwise accumulates across runs.
func (m *Machine) zeroGrads() error {
	for _, p := range m.params {
		gv, err := p.Grad()
		if err != nil || gv == nil {
			continue // no gradient bound yet: the first run allocates zeros
		}
		if d := p.Deriv(); d != nil && d.Value() == gv {
			// Not a dual value yet (p.Grad fell back to the gradient node's
			// own value, which may alias other data): nothing accumulates.
			continue
		}
		if err := zeroValue(gv); err != nil {
			return fmt.Errorf("graph: run: gradient of %q: %w", p.Name(), err)
		}
	}
	return nil
}

// zeroValue sets every element of v to zero in place.
func zeroValue(v G.Value) error {
	switch x := v.(type) {
	case *G.F64:
		*x = 0
	case *G.F32:
		*x = 0
	case tensor.Tensor:
		x.Zero()
	default:
		return fmt.Errorf("unsupported value type %T", v)
	}
	return nil
}

// Close releases the machine. Run fails afterwards; node values stay
// readable. Close is idempotent.
func (m *Machine) Close() error {
	if m.closed {
		return nil
	}
	m.closed = true
	if m.exec != nil {
		return m.exec.Close()
	}
	if m.host != nil {
		return m.host.Close()
	}
	return m.vm.Close()
}

// Params returns the parameters whose gradients the machine computes, nil
// for a forward-only machine.
func (m *Machine) Params() G.Nodes { return append(G.Nodes(nil), m.params...) }

// Grads returns the gradient nodes, aligned with Params (nil for a
// forward-only machine). Read gradients with [GradValues] on the parameter
// rather than from these nodes: the parameter's bound dual value is what the
// machine fills.
func (m *Machine) Grads() G.Nodes { return append(G.Nodes(nil), m.grads...) }

// HasGrad reports whether the machine computes gradients.
func (m *Machine) HasGrad() bool { return m.grads != nil }

// Loss returns the loss node the machine was built with (possibly nil).
func (m *Machine) Loss() *G.Node { return m.loss }

// Scope returns the scope the machine was built on.
func (m *Machine) Scope() *Scope { return m.s }

// String describes the machine for logs: loss, parameter count and mode.
func (m *Machine) String() string {
	var b strings.Builder
	b.WriteString("graph.Machine{")
	if m.loss != nil {
		fmt.Fprintf(&b, "loss %q, ", m.loss.Name())
	}
	if m.grads != nil {
		fmt.Fprintf(&b, "%d params with gradients", len(m.params))
	} else {
		b.WriteString("forward only")
	}
	b.WriteString("}")
	return b.String()
}
