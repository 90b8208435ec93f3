package layers

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/gdattn/gdattn/graph"
)

// nestedJSON is a kernel JSON form nested depth combinators deep: scaled
// around scaled ... around rbf, or sums whose first term nests on.
func nestedJSON(depth int, sum bool) string {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		if sum {
			b.WriteString(`{"name":"sum","terms":[`)
		} else {
			b.WriteString(`{"name":"scaled","beta":1,"kernel":`)
		}
	}
	b.WriteString(`"rbf"`)
	for i := 0; i < depth; i++ {
		if sum {
			b.WriteString(`,"linear"]}`)
		} else {
			b.WriteString(`}`)
		}
	}
	return b.String()
}

// within fails the test if f does not return within d (a hang detector,
// far above the milliseconds f takes).
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
	}
}

// TestKernelDepthBound: a kernel nested beyond MaxKernelDepth, or with
// more than MaxKernelNodes kernels in all, is refused by UnmarshalKernel,
// CheckKernel, MarshalKernel and InstantiateKernel with one error naming
// the bound, at once, however deep it is (JSON 800 and 9,000 deep, specs
// 100,000 deep in code); MaxKernelDepth itself is accepted.
func TestKernelDepthBound(t *testing.T) {
	for _, sum := range []bool{false, true} {
		ok := nestedJSON(MaxKernelDepth, sum)
		if _, err := UnmarshalKernel([]byte(ok)); err != nil {
			t.Errorf("sum %v: depth %d: %v", sum, MaxKernelDepth, err)
		}
		for _, depth := range []int{MaxKernelDepth + 1, 800, 9000} {
			js := nestedJSON(depth, sum)
			within(t, 10*time.Second, fmt.Sprintf("UnmarshalKernel %d deep", depth), func() {
				_, err := UnmarshalKernel([]byte(js))
				if err == nil || !strings.Contains(err.Error(), "MaxKernelDepth") || len(err.Error()) > 300 {
					t.Errorf("sum %v: depth %d: error %v, want one short error naming MaxKernelDepth", sum, depth, err)
				}
			})
		}
	}
	var deep KernelSpec = RBF(1)
	for i := 0; i < 100000; i++ {
		deep = Scaled(1, deep)
	}
	var terms []KernelSpec
	for i := 0; i < MaxKernelNodes; i++ {
		terms = append(terms, RBF(1))
	}
	wide := Sum(terms...)
	for name, k := range map[string]KernelSpec{"deep": deep, "wide": wide} {
		within(t, 10*time.Second, name, func() {
			want := "MaxKernelDepth"
			if name == "wide" {
				want = "MaxKernelNodes"
			}
			if err := CheckKernel(k); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: CheckKernel: %v, want an error naming %s", name, err, want)
			}
			if _, err := MarshalKernel(k); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: MarshalKernel: %v, want an error naming %s", name, err, want)
			}
			s, _ := graph.NewScope(graph.Float64, 0)
			if _, _, err := InstantiateKernel(s, k); err == nil || !strings.Contains(err.Error(), want) {
				t.Errorf("%s: InstantiateKernel: %v, want an error naming %s", name, err, want)
			}
		})
	}
}
