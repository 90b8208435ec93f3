package checkpoint

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph/npy"
)

// TestSaveExtraNames: an extra array whose name would put its file outside
// the checkpoint (or is empty) is refused, and nothing is written.
func TestSaveExtraNames(t *testing.T) {
	for _, name := range []string{"../../x", "..", "a/../../b", "", "/abs"} {
		parent := t.TempDir()
		dir := filepath.Join(parent, "ckpt")
		a := &npy.Array{Shape: []int{1}, Dtype: npy.Float64, F64: []float64{1}}
		err := Save(dir, ckptScope(t, ckptSpec{seed: 1}), nil, SaveOptions{Extra: map[string]*npy.Array{name: a}})
		if err == nil || !strings.Contains(err.Error(), "extra") {
			t.Errorf("extra array %q: %v, want an error", name, err)
		}
		if ents, _ := os.ReadDir(parent); len(ents) != 0 {
			t.Errorf("extra array %q: the failed save left %v", name, ents)
		}
	}
}
