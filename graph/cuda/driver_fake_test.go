//go:build gdcuda

package cuda

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/gdattn/gdattn/graph"
	"gorgonia.org/tensor"
)

// fakeEnv marks the child process of TestGPUBackendOnFakeDriver.
const fakeEnv = "GDATTN_FAKE_CUDA"

// TestGPUBackendOnFakeDriver builds testdata/fakecuda.c (a CPU stand-in for
// libcuda.so.1 and cuBLAS that runs the kernels compiled as C) into a
// temporary directory and re-runs this test binary's tests there with
// LD_LIBRARY_PATH pointing at it: the real GPU backend — dlopen, symbol
// lookup, context handling, kernelParams, launch geometry, the row-major Gemm
// through column-major cuBLAS — then runs end to end without a GPU. The child
// runs every test of the package (the executor's -tags gdcuda tests included)
// unless GDATTN_FAKE_RUN gives another -test.run pattern.
func TestGPUBackendOnFakeDriver(t *testing.T) {
	out := runOnFakeDriver(t, false, nil)
	if strings.Contains(out, "--- SKIP: TestGPUSelfTest") {
		t.Fatalf("TestGPUSelfTest skipped on the fake driver:\n%s", out)
	}
	t.Logf("tests on the fake driver:\n%s", grepLines(out, `^(--- |ok|PASS)|backend:`))
}

// TestGPUGemmWithoutCuBLAS runs the device self-test on the fake driver with
// GDATTN_NO_CUBLAS set, so that Gemm goes through the gemm_naive kernel.
func TestGPUGemmWithoutCuBLAS(t *testing.T) {
	t.Setenv("GDATTN_FAKE_RUN", "^TestGPUSelfTest$")
	t.Setenv("GDATTN_NO_CUBLAS", "1")
	out := runOnFakeDriver(t, false, nil)
	if !strings.Contains(out, "Gemm by the gemm_naive kernel (GDATTN_NO_CUBLAS set)") {
		t.Fatalf("Gemm did not use the gemm_naive kernel:\n%s", out)
	}
	t.Logf("%s", grepLines(out, `^(--- |ok|PASS)|backend:`))
}

// TestGPUKernelRaces runs the package's tests on the fake driver built with
// -DGDATTN_EMU_THREADS (every launch runs 4 OS threads, atomicAdd is atomic)
// and ThreadSanitizer, and fails on any data race: two work items of a kernel
// writing, or one writing and one reading, the same memory without atomics,
// which the serial emulator cannot notice but a GPU gets wrong. It takes about
// a minute, so it runs only with GDATTN_FAKE_TSAN=1 (scripts/ci-cuda.sh sets
// it).
func TestGPUKernelRaces(t *testing.T) {
	if os.Getenv("GDATTN_FAKE_TSAN") == "" {
		t.Skip("set GDATTN_FAKE_TSAN=1 to run the kernels under ThreadSanitizer")
	}
	out := runOnFakeDriver(t, true, nil)
	races, other := kernelRaces(out)
	if len(races) > 0 {
		t.Fatalf("%d data races between work items of kernels; the first:\n%s", len(races), races[0])
	}
	t.Logf("no data races between work items (%d other ThreadSanitizer reports: memory the Go side malloc'ed on another thread, ordered by Go synchronisation it cannot see):\n%s",
		other, grepLines(out, `^(--- |ok|PASS)|backend:`))
}

// TestGPUKernelRacesCaught checks that TestGPUKernelRaces would see a race
// between work items: on the same threaded fake driver under
// ThreadSanitizer, TestScatterRaceProbe launches scatter_rows with an order
// naming one id in two segments (two work items writing one element), and
// a race in scatter_rows must be reported. Runs with GDATTN_FAKE_TSAN=1,
// like TestGPUKernelRaces (scripts/ci-cuda.sh runs both).
func TestGPUKernelRacesCaught(t *testing.T) {
	if os.Getenv("GDATTN_FAKE_TSAN") == "" {
		t.Skip("set GDATTN_FAKE_TSAN=1 to run the kernels under ThreadSanitizer")
	}
	t.Setenv("GDATTN_FAKE_RUN", "^TestScatterRaceProbe$")
	t.Setenv(raceProbeEnv, "1")
	out := runOnFakeDriver(t, true, nil)
	if !strings.Contains(out, "--- PASS: TestScatterRaceProbe") {
		t.Fatalf("TestScatterRaceProbe did not run on the threaded fake driver:\n%s", out)
	}
	races, _ := kernelRaces(out)
	if len(races) == 0 || !strings.Contains(races[0], "scatter_rows_f64") {
		t.Fatalf("ThreadSanitizer reported no race in scatter_rows_f64 (%d kernel races):\n%s", len(races), out)
	}
	t.Logf("the deliberate race was reported (%d report(s)); the first:\n%s", len(races), races[0])
}

// kernelRaces returns the ThreadSanitizer reports in out whose two accesses
// both happen in kernel threads of the fake driver, and the number of other
// reports. An access is a kernel thread's when its stack runs through
// fake_thread, or, when ThreadSanitizer could not restore the stack of the
// earlier access (its history is short), when the report's description of
// the accessing thread says it was created by the fake driver's launch
// (fake_run_locked). ThreadSanitizer counts malloc as a write and does not
// see the Go mutex that orders the backend's calls, so memory the Go side
// allocates with C.malloc on one OS thread and a launch reads on another is
// reported too; those reports have no kernel frame in their previous access
// and their earlier access is the main thread's or a Go thread's.
func kernelRaces(out string) (races []string, other int) {
	reports := strings.Split(out, "WARNING: ThreadSanitizer: data race")[1:]
	for _, r := range reports {
		if i := strings.Index(r, "SUMMARY:"); i >= 0 {
			r = r[:i]
		}
		sections := strings.Split(r, "\n\n")
		kernel := func(i int) bool {
			if i >= len(sections) {
				return false
			}
			if strings.Contains(sections[i], "fake_thread") {
				return true
			}
			m := raceThreadRE.FindStringSubmatch(sections[i])
			if m == nil {
				return false
			}
			for _, sec := range sections {
				if strings.Contains(strings.TrimSpace(sec), "Thread "+m[1]+" (") {
					return strings.Contains(sec, "fake_run_locked")
				}
			}
			return false
		}
		if kernel(0) && kernel(1) {
			races = append(races, r)
		} else {
			other++
		}
	}
	return races, other
}

// raceThreadRE finds the thread of an access in a ThreadSanitizer report.
var raceThreadRE = regexp.MustCompile(`(?m)^\s*(?:Previous )?[A-Za-z ]*?(?:read|write) of size \d+ at \S+ by thread (T\d+)`)

var dispatchCaseRE = regexp.MustCompile(`(?m)^    case (\d+):\n        (\w+)\(`)

// TestGPUGraphCaptureUnsupported runs the executor tests on a fake driver
// without cuGraphLaunch (an old driver): Open works, ordinary executors
// work, and ExecOptions.GraphCapture is an error naming the missing entry
// point (TestGraphCaptureNoGraphAPI in the child), never a panic.
func TestGPUGraphCaptureUnsupported(t *testing.T) {
	t.Setenv("GDATTN_FAKE_RUN", "^(TestGraphCaptureNoGraphAPI|TestGPUSelfTest)$")
	t.Setenv("GDATTN_FAKE_NO_GRAPHS", "1")
	out := runOnFakeDriver(t, false, []string{"-DFAKE_NO_GRAPHS"})
	if !strings.Contains(out, "--- PASS: TestGraphCaptureNoGraphAPI") {
		t.Fatalf("TestGraphCaptureNoGraphAPI did not pass on the fake driver without graphs:\n%s", out)
	}
	t.Logf("%s", grepLines(out, `^(--- |ok|PASS)|backend:|lacks`))
}

// TestGraphCaptureNoGraphAPI runs only inside TestGPUGraphCaptureUnsupported.
func TestGraphCaptureNoGraphAPI(t *testing.T) {
	if os.Getenv("GDATTN_FAKE_NO_GRAPHS") == "" {
		t.Skip("runs on the fake driver without graphs (TestGPUGraphCaptureUnsupported)")
	}
	be, _ := execBackend(t)
	for _, capture := range []bool{false, true} {
		m, err := buildModel("tf", tensor.Float64, 9)
		if err != nil {
			t.Fatal(err)
		}
		opts := ExecOptions{GraphCapture: capture, DeviceGrads: true, Logf: func(string, ...any) {}}
		mach, err := graph.NewMachine(m.s, m.loss, graph.MachineOptions{Executor: NewExecutorWith(be, opts)})
		if capture {
			if err == nil || !strings.Contains(err.Error(), "lacks cuGraphLaunch") {
				t.Errorf("GraphCapture without cuGraphLaunch: %v, want an error naming it", err)
			} else {
				t.Logf("GraphCapture: %v", err)
			}
			if err == nil {
				mach.Close()
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if err := mach.Run(); err != nil {
			t.Errorf("ordinary executor on the driver without graphs: %v", err)
		}
		mach.Close()
	}
}

// runOnFakeDriver builds the fake driver (threaded and under ThreadSanitizer
// with tsan; cflags adds compiler flags) and runs this test binary against
// it; it returns the output.
func runOnFakeDriver(t *testing.T, tsan bool, cflags []string) string {
	t.Helper()
	if os.Getenv(fakeEnv) != "" {
		t.Skip("inside a fake-driver run")
	}
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake driver", cc)
	}
	// The fake calls kernels by their index in emu_kernels.c; check that it
	// matches the kernel table compiled into this binary.
	src, err := os.ReadFile("emu_kernels.c")
	if errors.Is(err, fs.ErrNotExist) {
		t.Skip("emu_kernels.c not here: the test binary runs outside graph/cuda (e.g. from scripts/gpu-bundle.sh)")
	}
	if err != nil {
		t.Fatal(err)
	}
	cases := dispatchCaseRE.FindAllStringSubmatch(string(src), -1)
	if len(cases) != len(kernelTable) {
		t.Fatalf("emu_kernels.c dispatches %d kernels, the kernel table has %d: run go generate ./graph/cuda", len(cases), len(kernelTable))
	}
	for i, c := range cases {
		if c[1] != fmt.Sprint(i) || c[2] != kernelTable[i].name {
			t.Fatalf("emu_kernels.c case %s calls %s, the kernel table's entry %d is %s: run go generate ./graph/cuda", c[1], c[2], i, kernelTable[i].name)
		}
	}
	dir := t.TempDir()
	var names strings.Builder
	names.WriteString("const char *fake_kernel_names[] = {\n")
	for _, k := range kernelTable {
		fmt.Fprintf(&names, "\t%q,\n", k.name)
	}
	fmt.Fprintf(&names, "};\nconst int fake_kernel_count = %d;\nconst int fake_kernel_nparams[] = {", len(kernelTable))
	for _, k := range kernelTable {
		fmt.Fprintf(&names, "%d,", len(k.params))
	}
	names.WriteString("};\n")
	namesC := filepath.Join(dir, "names.c")
	if err := os.WriteFile(namesC, []byte(names.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	lib := filepath.Join(dir, "libcuda.so.1")
	args := []string{"-shared", "-fPIC", "-O1", "-g", "-std=gnu11", "-I.", "-pthread", "-o", lib}
	env := []string{fakeEnv + "=1", "GDATTN_REQUIRE_GPU=1"}
	if tsan {
		rt, err := exec.Command(cc, "-print-file-name=libtsan.so").Output()
		rtPath := strings.TrimSpace(string(rt))
		if err != nil || !filepath.IsAbs(rtPath) {
			t.Skipf("%s has no ThreadSanitizer runtime (libtsan.so)", cc)
		}
		args = append(args, "-fsanitize=thread", "-DGDATTN_EMU_THREADS")
		// The backend allocates its argument slots with malloc, not calloc,
		// so that ThreadSanitizer sees no write of them: the writes are Go's,
		// ordered before each launch by a Go mutex it cannot see.
		env = append(env, "LD_PRELOAD="+rtPath, "TSAN_OPTIONS=history_size=4")
	}
	args = append(args, cflags...)
	args = append(args, filepath.Join("testdata", "fakecuda.c"), "emu_kernels.c", namesC, "-lm")
	if out, err := exec.Command(cc, args...).CombinedOutput(); err != nil {
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
	child.Env = append(append(os.Environ(), env...),
		"GDATTN_CUBLAS="+blas,
		"LD_LIBRARY_PATH="+dir+string(os.PathListSeparator)+os.Getenv("LD_LIBRARY_PATH"))
	out, err := child.CombinedOutput()
	if err != nil {
		t.Fatalf("tests on the fake driver: %v\n%s", err, out)
	}
	if (run == "." || strings.Contains(run, "TestGPUSelfTest")) && !regexp.MustCompile(`backend: Fake CPU device \(sm_90, 4 SMs, 1 GiB\), (libcublas\.so\.13|Gemm by the gemm_naive kernel)`).Match(out) {
		t.Fatalf("the GPU tests did not run on the fake driver:\n%s", out)
	}
	return string(out)
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
