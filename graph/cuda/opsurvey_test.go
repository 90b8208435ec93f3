package cuda

import (
	"fmt"
	"sort"
	"testing"

	"github.com/gdattn/gdattn/graph"
	G "gorgonia.org/gorgonia"
)

func TestOpSurvey(t *testing.T) {
	all := map[string]bool{}
	for _, name := range modelNames {
		m, err := buildModel(name, graph.Float64, 1)
		if err != nil {
			t.Fatal(err)
		}
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{})
		if err != nil {
			t.Fatal(err)
		}
		mach.Close()
		for _, n := range m.s.Graph().AllNodes() {
			if n.Op() == nil {
				continue
			}
			all[fmt.Sprintf("%T %v", n.Op(), n.Op())] = true
		}
	}
	var keys []string
	for k := range all {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		t.Log(k)
	}
	_ = G.Nodes{}
}
