package cuda

import (
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/ops"
)

// TestKernelCodesMatchSources checks the named kind codes against the C
// source of attn_score (kernels/attn.cu), which compares kind with
// literals: each code's case computes its kernel (softmax, with no case
// there, falls through to g·q·k, the scores its normalisation takes).
func TestKernelCodesMatchSources(t *testing.T) {
	src, err := os.ReadFile("kernels/attn.cu")
	if err != nil {
		t.Fatal(err)
	}
	text := string(src)
	for _, c := range []struct {
		code int32
		kind ops.KernelKind
		body string
	}{
		{kernLinear, ops.KindLinear, "return GDATTN_NAME(attn_dot, S)(q, k, d);"},
		{kernRBF, ops.KindRBF, "return exp(-g * GDATTN_NAME(attn_sqdist, S)(q, k, d));"},
		{kernExp, ops.KindExp, "return exp(g * GDATTN_NAME(attn_dot, S)(q, k, d));"},
		{kernLaplacian, ops.KindLaplacian, "return exp(-g * sqrt(GDATTN_NAME(attn_sqdist, S)(q, k, d)));"},
	} {
		if want := fmt.Sprintf("case %d: %s", c.code, c.body); !strings.Contains(text, want) {
			t.Errorf("%v: kernels/attn.cu has no %q", c.kind, want)
		}
		if got, ok := kernelCode(c.kind); !ok || got != c.code {
			t.Errorf("kernelCode(%v) = %d, %v; want %d", c.kind, got, ok, c.code)
		}
	}
	if got, ok := kernelCode(ops.KindSoftmax); !ok || got != kernSoftmax {
		t.Errorf("kernelCode(softmax) = %d, %v", got, ok)
	}
}
