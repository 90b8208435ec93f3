//go:build gdcuda

package cuda

import (
	"errors"
	"os"
	"regexp"
	"strings"
	"testing"
)

// openGPU opens device 0, skipping the test (with the reason) when there is
// no usable device, unless GDATTN_REQUIRE_GPU is set (scripts/gpu-device.sh sets it).
func openGPU(t *testing.T) Backend {
	t.Helper()
	be, err := Open(0)
	if errors.Is(err, ErrNoDevice) && os.Getenv("GDATTN_REQUIRE_GPU") == "" {
		t.Skip(err.Error())
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := be.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return be
}

// TestGPUSelfTest runs the device self-test on GPU 0.
func TestGPUSelfTest(t *testing.T) {
	testBackend(t, openGPU(t))
}

// TestGPUEveryKernelLoads looks up every kernel of the table in the JIT-compiled module.
func TestGPUEveryKernelLoads(t *testing.T) {
	g := openGPU(t).(*gpu)
	g.mu.Lock()
	defer g.mu.Unlock()
	for i := range kernelTable {
		if _, err := g.function(i); err != nil {
			t.Error(err)
		}
	}
}

// TestOpenError checks Open's error when there is no device (on a GPU
// machine it checks instead that a bad ordinal is an error).
func TestOpenError(t *testing.T) {
	be, err := Open(0)
	if err == nil {
		be.Close()
		if _, err := Open(1 << 20); err == nil || errors.Is(err, ErrNoDevice) {
			t.Fatalf("Open(1<<20) = %v, want an out-of-range error", err)
		}
		return
	}
	if !errors.Is(err, ErrNoDevice) {
		t.Fatalf("Open(0) without a usable device: %v does not wrap ErrNoDevice", err)
	}
	if !strings.HasPrefix(err.Error(), "cuda: no CUDA device found: ") {
		t.Fatalf("Open(0) error %q lacks the no-device prefix", err)
	}
	t.Logf("Open(0): %v", err)
}

var entryRE = regexp.MustCompile(`(?m)^\.visible \.entry ([A-Za-z_][A-Za-z0-9_]*)\(`)

// TestPTXMatchesSources checks that the embedded PTX was built from the
// current kernels/*.cu and defines exactly the kernels of the table, with
// C (unmangled) names.
func TestPTXMatchesSources(t *testing.T) {
	m := regexp.MustCompile(`(?m)^// kernel source sha256: ([0-9a-f]+)$`).FindStringSubmatch(ptxSource)
	if m == nil {
		t.Fatal("kernels/gdattn.ptx has no source hash: rebuild it with scripts/build-ptx.sh")
	}
	if m[1] != kernelSourceHash {
		t.Errorf("kernels/gdattn.ptx was built from other kernel sources (%s, now %s): run scripts/build-ptx.sh", m[1], kernelSourceHash)
	}
	inPTX := map[string]bool{}
	for _, e := range entryRE.FindAllStringSubmatch(ptxSource, -1) {
		inPTX[e[1]] = true
	}
	for _, k := range kernelTable {
		if !inPTX[k.name] {
			t.Errorf("kernel %s (%s) missing from kernels/gdattn.ptx", k.name, k.file)
		}
		delete(inPTX, k.name)
	}
	for name := range inPTX {
		t.Errorf("kernels/gdattn.ptx has entry %s that is not in the kernel table (a __global__ without GDATTN_KERNEL?)", name)
	}
}

// TestPTXTargetsVolta checks that the embedded PTX targets compute
// capability 7.0 (.target sm_70), the oldest GPUs the backend supports
// (V100): PTX for a newer virtual architecture would not load there, while
// sm_70 PTX is JIT-compiled forward for every newer GPU.
func TestPTXTargetsVolta(t *testing.T) {
	m := regexp.MustCompile(`(?m)^\.target (sm_\d+)\b`).FindStringSubmatch(ptxSource)
	if m == nil {
		t.Fatal("kernels/gdattn.ptx has no .target line")
	}
	if m[1] != "sm_70" {
		t.Errorf("kernels/gdattn.ptx targets %s, want sm_70 (V100 and newer): rebuild it with scripts/build-ptx.sh", m[1])
	}
}

// TestLoadCuBLAS resolves the cuBLAS entry points in whichever cuBLAS this
// machine has (no device needed), checking the symbol names; with
// GDATTN_REQUIRE_GPU set a missing cuBLAS fails instead of skipping.
func TestLoadCuBLAS(t *testing.T) {
	loadMu.Lock()
	defer loadMu.Unlock()
	if err := loadCuBLAS(); err != nil {
		if os.Getenv("GDATTN_REQUIRE_GPU") != "" {
			t.Fatalf("%v (GDATTN_REQUIRE_GPU is set: the GPU run needs cuBLAS; set GDATTN_CUBLAS to its path)", err)
		}
		t.Skip(err)
	}
	t.Logf("cuBLAS: %s", cublasUsed)
}
