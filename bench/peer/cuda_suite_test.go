package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCUDASuiteSelfCheck runs cuda_suite.py --self-check where Debian's
// python3-torch is installed: every configuration that PyTorch supports on
// the CPU (its torch 1.13 has neither torch.compile nor a fused AdamW, which
// the script must say and skip) trains small language and in-context
// models, and each one's first losses must match eager's. It rehearses the
// GPU peer's code paths that can run here.
func TestCUDASuiteSelfCheck(t *testing.T) {
	const python = "/usr/bin/python3"
	if testing.Short() {
		t.Skip("starts PyTorch")
	}
	if err := exec.Command(python, "-c", "import torch, numpy").Run(); err != nil {
		t.Skipf("no PyTorch at %s (apt-get install -y python3-torch): %v", python, err)
	}
	cmd := exec.Command(python, "cuda_suite.py", "--self-check", "--threads", "1")
	cmd.Env = append(os.Environ(), "OMP_NUM_THREADS=1", "OPENBLAS_NUM_THREADS=1")
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("cuda_suite.py --self-check: %v\n%s", err, out)
	}
	s := string(out)
	for _, want := range []string{"eager idiomatic language-tiny/gpt", "eager mirror language-tiny/gdlm", "0 failed; skipped here: "} {
		if !strings.Contains(s, want) {
			t.Errorf("self-check output lacks %q:\n%s", want, s)
		}
	}
	if strings.Contains(s, "MISMATCH") || strings.Contains(s, "FAILED") {
		t.Errorf("self-check:\n%s", s)
	}
	t.Logf("%s", s[strings.LastIndex(s, "cuda_suite self-check: "):])
}
