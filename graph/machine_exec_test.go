package graph

import (
	"errors"
	"strings"
	"testing"

	G "gorgonia.org/gorgonia"
)

// fakeExec records what the machine hands an executor and runs the program
// with a TapeMachine on the same graph (so results are checkable).
type fakeExec struct {
	p      *Program
	vm     G.VM
	runs   int
	closed bool
}

func (f *fakeExec) Run() error {
	f.runs++
	if f.runs > 1 {
		f.vm.Reset()
		// The tape machine accumulates into the dual values: an executor
		// leaves this run's gradients only.
		for _, p := range f.p.Params {
			if gv, err := p.Grad(); err == nil {
				if err := zeroValue(gv); err != nil {
					return err
				}
			}
		}
	}
	return f.vm.RunAll()
}

func (f *fakeExec) Close() error {
	f.closed = true
	return f.vm.Close()
}

func TestMachineExecutor(t *testing.T) {
	m := newLinModel(t, Float64)
	var fe *fakeExec
	factory := func(p *Program) (Executor, error) {
		fe = &fakeExec{p: p, vm: G.NewTapeMachine(p.Graph, G.BindDualValues(p.Params...))}
		return fe, nil
	}
	mach, err := NewMachine(m.s, m.loss, MachineOptions{Executor: factory, Outputs: G.Nodes{m.w}})
	if err != nil {
		t.Fatal(err)
	}
	if mach.Executor() != fe || fe == nil {
		t.Fatal("machine does not hold the factory's executor")
	}
	p := fe.p
	if p.Loss != m.loss || len(p.Params) != 2 || len(p.Grads) != 2 || len(p.Outputs) != 1 || p.Trace {
		t.Fatalf("program: loss %v, %d params, %d grads, %d outputs, trace %v", p.Loss, len(p.Params), len(p.Grads), len(p.Outputs), p.Trace)
	}
	for i, g := range p.Grads {
		if p.Params[i].Deriv() != g {
			t.Errorf("gradient node %d is not parameter %q's", i, p.Params[i].Name())
		}
	}
	// Every node comes after the nodes it reads: a node's position is
	// after all its inputs (checked through the graph's edges).
	pos := map[*G.Node]int{}
	for i, n := range p.Nodes {
		pos[n] = i
	}
	if len(pos) != len(p.Graph.AllNodes()) {
		t.Errorf("program has %d nodes, graph %d", len(pos), len(p.Graph.AllNodes()))
	}
	for _, n := range p.Nodes {
		for it := p.Graph.From(n.ID()); it.Next(); {
			c := it.Node().(*G.Node)
			if pos[c] >= pos[n] {
				t.Errorf("node %q comes before its input %q", n.Name(), c.Name())
			}
		}
	}
	if err := SetValue(m.x, []float64{1, 2, 3, 4, 5, 6}); err != nil {
		t.Fatal(err)
	}
	if err := SetValue(m.y, []float64{0, 1, 1, 0}); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if err := mach.Run(); err != nil {
			t.Fatal(err)
		}
	}
	if fe.runs != 2 {
		t.Errorf("executor ran %d times, want 2", fe.runs)
	}
	// x W - y = [[4-0, -1-1], [10-1, -1-0]]: sum of squares 16+4+81+1 = 102.
	if l, err := Scalar(m.loss); err != nil || l != 0.5*102 {
		t.Errorf("loss %v (%v), want 51", l, err)
	}
	if err := mach.Close(); err != nil || !fe.closed {
		t.Errorf("Close: %v, executor closed %v", err, fe.closed)
	}
	if err := mach.Run(); err == nil {
		t.Error("Run after Close succeeded")
	}
}

func TestMachineExecutorErrors(t *testing.T) {
	m := newLinModel(t, Float64)
	boom := errors.New("boom")
	if _, err := NewMachine(m.s, m.loss, MachineOptions{Executor: func(*Program) (Executor, error) { return nil, boom }}); !errors.Is(err, boom) {
		t.Errorf("factory error: got %v", err)
	}
	if _, err := NewMachine(m.s, m.loss, MachineOptions{Executor: func(*Program) (Executor, error) { return nil, nil }}); err == nil || !strings.Contains(err.Error(), "nil") {
		t.Errorf("nil executor: got %v", err)
	}
	failing := func(*Program) (Executor, error) { return runErr{}, nil }
	mach, err := NewMachine(m.s, m.loss, MachineOptions{Executor: failing})
	if err != nil {
		t.Fatal(err)
	}
	if err := mach.Run(); err == nil || !strings.Contains(err.Error(), "graph: run: device lost") {
		t.Errorf("Run error: got %v", err)
	}
}

type runErr struct{}

func (runErr) Run() error   { return errors.New("device lost") }
func (runErr) Close() error { return nil }
