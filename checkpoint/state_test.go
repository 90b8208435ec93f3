package checkpoint

import (
	"bytes"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/gdattn/gdattn/graph"
	"github.com/gdattn/gdattn/graph/npy"
)

// resum rewrites the checksums of config.json in dir to match the files
// and itself, as a save would: it makes a hand-made checkpoint intact, so
// tests can reach the checks behind the checksums.
func resum(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, "config.json")
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	out, err := resumConfig(b, func(rel string) ([]byte, error) { return os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel))) })
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, out, 0o644); err != nil {
		t.Fatal(err)
	}
}

// resumConfig returns config.json b with every checksum recomputed, reading
// the listed files with file (a file it cannot read keeps its checksum).
func resumConfig(b []byte, file func(rel string) ([]byte, error)) ([]byte, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		return nil, err
	}
	var man map[string]any
	dec := json.NewDecoder(bytes.NewReader(top["manifest"]))
	dec.UseNumber() // keep integers such as the step count exact
	if err := dec.Decode(&man); err != nil {
		return nil, err
	}
	fix := func(e any, fileKey, sumKey string) {
		m, ok := e.(map[string]any)
		if !ok {
			return
		}
		rel, ok := m[fileKey].(string)
		if !ok {
			return
		}
		if data, err := file(rel); err == nil {
			m[sumKey] = hexSum(data)
		}
	}
	for _, key := range []string{"params", "extra"} {
		if list, ok := man[key].([]any); ok {
			for _, e := range list {
				fix(e, "file", "sha256")
			}
		}
	}
	if om, ok := man["optim"].(map[string]any); ok {
		if list, ok := om["moments"].([]any); ok {
			for _, e := range list {
				fix(e, "m", "m_sha256")
				fix(e, "v", "v_sha256")
			}
		}
	}
	mb, err := json.Marshal(man)
	if err != nil {
		return nil, err
	}
	top["manifest"] = mb
	ms, err := jsonSum(mb)
	if err != nil {
		return nil, err
	}
	cs, err := jsonSum(top["config"])
	if err != nil {
		cs = strings.Repeat("0", 64)
	}
	top["sha256"], _ = json.Marshal(checksums{Manifest: ms, Config: cs})
	return json.MarshalIndent(top, "", "  ")
}

// TestOptimStateChecked: Save refuses, and Read rejects in an intact
// checkpoint, NaN or infinite moments, negative second moments and step
// counts past 2^53.
func TestOptimStateChecked(t *testing.T) {
	good := func() *OptimState {
		return &OptimState{Step: 3, M: map[string][]float64{"a": {0.5}, "lin/b": {1, 2, 3}}, V: map[string][]float64{"a": {0.25}, "lin/b": {1, 2, 3}}}
	}
	tests := []struct {
		name   string
		break_ func(st *OptimState, dir string, t *testing.T)
		want   string
	}{
		{"NaN first moment", func(st *OptimState, dir string, t *testing.T) {
			st.M["lin/b"][1] = math.NaN()
			writeArr(t, filepath.Join(dir, "optim", "m", "lin__b.npy"), []float64{1, math.NaN(), 3})
		}, `M["lin/b"][1] = NaN`},
		{"negative second moment", func(st *OptimState, dir string, t *testing.T) {
			st.V["a"][0] = -2
			writeScalar(t, filepath.Join(dir, "optim", "v", "a.npy"), -2)
		}, `V["a"][0] = -2`},
		{"infinite second moment", func(st *OptimState, dir string, t *testing.T) {
			st.V["a"][0] = math.Inf(1)
			writeScalar(t, filepath.Join(dir, "optim", "v", "a.npy"), math.Inf(1))
		}, `V["a"][0] = +Inf`},
		{"step past 2^53", func(st *OptimState, dir string, t *testing.T) {
			st.Step = math.MaxInt64
			replaceInFile(t, filepath.Join(dir, "config.json"), `"step": 3`, `"step": 9223372036854775807`)
		}, "step 9223372036854775807"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "ckpt")
			s := ckptScope(t, ckptSpec{seed: 1})
			if err := Save(dir, s, nil, SaveOptions{Optim: good()}); err != nil {
				t.Fatal(err)
			}
			bad := good()
			tc.break_(bad, dir, t)
			resum(t, dir)
			if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Read: got %v, want an error containing %q", err, tc.want)
			}
			err := Save(filepath.Join(t.TempDir(), "other"), s, nil, SaveOptions{Optim: bad})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Save: got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

func writeArr(t *testing.T, path string, v []float64) {
	t.Helper()
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{len(v)}, Dtype: npy.Float64, F64: v}); err != nil {
		t.Fatal(err)
	}
}

func writeScalar(t *testing.T, path string, v float64) {
	t.Helper()
	if err := npy.WriteFile(path, &npy.Array{Shape: []int{}, Dtype: npy.Float64, F64: []float64{v}}); err != nil {
		t.Fatal(err)
	}
}

// TestConvertDtypeOverflow: loading a float64 checkpoint into a float32
// scope refuses a value that float32 cannot hold (1e300 would become +Inf),
// naming the parameter and the element, and changes no parameter.
func TestConvertDtypeOverflow(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ckpt")
	src := ckptScope(t, ckptSpec{seed: 1})
	for _, p := range src.Params() {
		if p.Name() == "lin/b" {
			if err := graph.SetValue(p, []float64{1, -1e300, 3}); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := Save(dir, src, nil, SaveOptions{}); err != nil {
		t.Fatal(err)
	}
	c, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	dst := ckptScope(t, ckptSpec{dt: dtypeOf[float32](), seed: 2})
	before := paramValues(t, dst)
	err = c.Apply(dst, LoadOptions{ConvertDtype: true})
	if err == nil || !strings.Contains(err.Error(), `parameter "lin/b"`) || !strings.Contains(err.Error(), "element 1") || !strings.Contains(err.Error(), "float32") {
		t.Errorf("got %v, want an overflow error naming lin/b element 1", err)
	}
	if diff := cmp.Diff(before, paramValues(t, dst)); diff != "" {
		t.Errorf("parameters changed by a failed load:\n%s", diff)
	}
}
