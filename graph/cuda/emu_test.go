//go:build cudaemu

package cuda

import (
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"gorgonia.org/tensor"
)

func openEmu(t *testing.T) Backend {
	t.Helper()
	be, err := OpenEmulator()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { be.Close() })
	return be
}

// TestEmulatorSelfTest runs the shared device self-test on the emulator.
func TestEmulatorSelfTest(t *testing.T) {
	testBackend(t, openEmu(t))
}

// TestEmulatorArgErrors checks that bad launches are errors, not crashes.
func TestEmulatorArgErrors(t *testing.T) {
	be := openEmu(t)
	p, err := be.Alloc(64)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		kern string
		n    int64
		args []any
		want string
	}{
		{"unknown kernel", "no_such_kernel", 1, nil, "unknown kernel"},
		{"too few", "fill_f32", 4, []any{int64(4), float32(1)}, "takes 3 arguments, got 2"},
		{"too many", "fill_f32", 4, []any{int64(4), float32(1), p, p}, "takes 3 arguments, got 4"},
		{"float64 for float", "fill_f32", 4, []any{int64(4), 1.0, p}, "want float32, got float64"},
		{"uintptr for pointer", "fill_f32", 4, []any{int64(4), float32(1), uintptr(p)}, "want cuda.Ptr, got uintptr"},
		{"int32 for long long", "fill_f32", 4, []any{int32(4), float32(1), p}, "want int64, got int32"},
		{"int overflowing int", "iota_f32", 4, []any{int64(4), float32(0), float32(1), math.MaxInt32 + 1, p}, "overflows int32"},
		{"pointer outside allocations", "fill_f32", 4, []any{int64(4), float32(1), Ptr(8)}, "not in any live allocation"},
		{"pointer past the end", "fill_f32", 4, []any{int64(4), float32(1), p + 65}, "not inside one live allocation"},
		{"negative n", "fill_f32", -1, []any{int64(4), float32(1), p}, "negative work-item count"},
	}
	for _, c := range cases {
		err := be.Launch(c.kern, c.n, c.args...)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: Launch error %v, want one containing %q", c.name, err, c.want)
		}
	}
	// A Go int is accepted for int and long long.
	if err := be.Launch("iota_f32", 4, 4, float32(0), float32(1), 1, p); err != nil {
		t.Errorf("Launch with Go ints: %v", err)
	}
	// Copies and Gemm outside allocations are errors too.
	var buf [128]byte
	if err := be.CopyHtoD(p+32, unsafe.Pointer(&buf[0]), 64); err == nil {
		t.Error("CopyHtoD past the end of an allocation: no error")
	}
	if err := be.CopyDtoH(unsafe.Pointer(&buf[0]), p, 65); err == nil {
		t.Error("CopyDtoH past the end of an allocation: no error")
	}
	if err := be.Gemm(tensor.Float64, false, false, 3, 3, 3, 1, p, 3, 0, p, 3, 0, 0, p, 3, 0, 1); err == nil {
		t.Error("Gemm with 72-byte operands in a 64-byte allocation: no error")
	}
	if err := be.Gemm(tensor.Float64, false, false, 2, 2, 2, 1, p, 1, 0, p, 2, 0, 0, p, 2, 0, 1); err == nil {
		t.Error("Gemm with lda < k: no error")
	}
	if err := be.Gemm(tensor.Int, false, false, 2, 2, 2, 1, p, 2, 0, p, 2, 0, 0, p, 2, 0, 1); err == nil {
		t.Error("Gemm on int: no error")
	}
	if err := be.Free(p + 8); err == nil {
		t.Error("Free of an interior pointer: no error")
	}
	if err := be.Free(p); err != nil {
		t.Fatal(err)
	}
	if err := be.Free(p); err == nil {
		t.Error("double Free: no error")
	}
	if err := be.Launch("fill_f32", 4, int64(4), float32(1), p); err == nil {
		t.Error("Launch on freed memory: no error")
	}
	if _, err := be.Alloc(0); err == nil {
		t.Error("Alloc(0): no error")
	}
	if err := be.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Alloc(8); !errors.Is(err, errClosed) {
		t.Errorf("Alloc after Close: %v, want errClosed", err)
	}
}

// TestEmulatorPoison checks that fresh allocations read as NaN.
func TestEmulatorPoison(t *testing.T) {
	be := openEmu(t)
	p, err := be.Alloc(32)
	if err != nil {
		t.Fatal(err)
	}
	var got [4]float64
	if err := be.CopyDtoH(unsafe.Pointer(&got[0]), p, 32); err != nil {
		t.Fatal(err)
	}
	for _, v := range got {
		if !math.IsNaN(v) {
			t.Fatalf("fresh allocation holds %v, want NaN", got)
		}
	}
}

// TestKernelTableUpToDate fails when kernels/*.cu changed without
// go generate ./graph/cuda.
func TestKernelTableUpToDate(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command to run the generator")
	}
	if _, err := os.Stat(filepath.Join("internal", "gen")); err != nil {
		t.Skip("internal/gen not here: the test binary runs outside graph/cuda (e.g. from scripts/gpu-bundle.sh)")
	}
	out, err := exec.Command("go", "run", "./internal/gen", "-check").CombinedOutput()
	if err != nil {
		t.Fatalf("go run ./internal/gen -check: %v\n%s", err, out)
	}
}

// TestEmulatorRandomGemm compares many random Gemm shapes with the reference.
func TestEmulatorRandomGemm(t *testing.T) {
	be := openEmu(t)
	rng := rand.New(rand.NewPCG(7, 8))
	for trial := 0; trial < 40; trial++ {
		testGemmCase(t, be, rng, tensor.Float64, 1+rng.IntN(7), 1+rng.IntN(7), rng.IntN(7), 1+rng.IntN(4), rng.IntN(2) == 0, rng.IntN(2) == 0)
		testGemmCase(t, be, rng, tensor.Float32, 1+rng.IntN(7), 1+rng.IntN(7), rng.IntN(7), 1+rng.IntN(4), rng.IntN(2) == 0, rng.IntN(2) == 0)
	}
}
