//go:build gdcuda

package cuda

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// fakeEnv marks the child process of TestGPUBackendOnFakeDriver.
const fakeEnv = "GDATTN_FAKE_CUDA"

// TestGPUBackendOnFakeDriver builds testdata/fakecuda.c (a CPU stand-in for
// libcuda.so.1 and cuBLAS that runs the kernels compiled as C) into a
// temporary directory and re-runs this test binary's GPU tests there with
// LD_LIBRARY_PATH pointing at it: the real GPU backend — dlopen, symbol
// lookup, context handling, kernelParams, launch geometry, the row-major Gemm
// through column-major cuBLAS — then runs end to end without a GPU.
// The child runs every test of the package (the executor's -tags gdcuda
// tests included) unless GDATTN_FAKE_RUN gives another -test.run pattern.
func TestGPUBackendOnFakeDriver(t *testing.T) {
	if os.Getenv(fakeEnv) != "" {
		t.Skip("inside the fake-driver run")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake driver", cc)
	}
	dir := t.TempDir()
	var names strings.Builder
	names.WriteString("const char *fake_kernel_names[] = {\n")
	for _, k := range kernelTable {
		fmt.Fprintf(&names, "\t%q,\n", k.name)
	}
	fmt.Fprintf(&names, "};\nconst int fake_kernel_count = %d;\n", len(kernelTable))
	namesC := filepath.Join(dir, "names.c")
	if err := os.WriteFile(namesC, []byte(names.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libcuda.so.1")
	build := exec.Command(cc, "-shared", "-fPIC", "-O1", "-std=gnu11", "-o", lib,
		filepath.Join("testdata", "fakecuda.c"), "emu_kernels.c", namesC, "-lm")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the fake driver: %v\n%s", err, out)
	}
	blas := filepath.Join(dir, "libcublas.so.13")
	if err := os.Link(lib, blas); err != nil {
		t.Fatal(err)
	}
	run := os.Getenv("GDATTN_FAKE_RUN")
	if run == "" {
		run = "."
	}
	child := exec.Command(os.Args[0], "-test.run", run, "-test.v", "-test.count=1")
	child.Env = append(os.Environ(),
		fakeEnv+"=1",
		"GDATTN_REQUIRE_GPU=1",
		"GDATTN_CUBLAS="+blas,
		"LD_LIBRARY_PATH="+dir+string(os.PathListSeparator)+os.Getenv("LD_LIBRARY_PATH"))
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("GPU tests on the fake driver: %v\n%s", err, out)
	}
	if !regexp.MustCompile(`backend: Fake CPU device \(sm_90, 4 SMs, 1 GiB\), libcublas\.so\.13`).Match(out) {
		t.Fatalf("the GPU tests did not run on the fake driver:\n%s", out)
	}
	if strings.Contains(string(out), "--- SKIP: TestGPUSelfTest") {
		t.Fatalf("TestGPUSelfTest skipped on the fake driver:\n%s", out)
	}
	t.Logf("GPU tests on the fake driver:\n%s", grepLines(string(out), `^(--- |ok|PASS)|backend:`))
}

func grepLines(s, pattern string) string {
	re := regexp.MustCompile(pattern)
	var keep []string
	for _, l := range strings.Split(s, "\n") {
		if re.MatchString(strings.TrimSpace(l)) || re.MatchString(l) {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}
