package bench

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// CPU describes the processor from /proc/cpuinfo.
type CPU struct {
	Model   string  // "model name"
	Family  int     // "cpu family" (26 = AMD Zen 5)
	MHz     float64 // "cpu MHz" of the first processor: the nominal clock a KVM guest sees
	Threads int     // logical CPUs listed
	AVX512  bool    // avx512f flag
	FMA     bool    // fma flag
}

// ReadCPU parses /proc/cpuinfo.
func ReadCPU() (CPU, error) {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return CPU{}, err
	}
	return parseCPUInfo(string(b))
}

func parseCPUInfo(s string) (CPU, error) {
	var c CPU
	for _, line := range strings.Split(s, "\n") {
		k, v, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		k, v = strings.TrimSpace(k), strings.TrimSpace(v)
		switch k {
		case "processor":
			c.Threads++
		case "model name":
			if c.Model == "" {
				c.Model = v
			}
		case "cpu family":
			if c.Family == 0 {
				c.Family, _ = strconv.Atoi(v)
			}
		case "cpu MHz":
			if c.MHz == 0 {
				c.MHz, _ = strconv.ParseFloat(v, 64)
			}
		case "flags":
			if c.Threads <= 1 {
				for _, f := range strings.Fields(v) {
					c.AVX512 = c.AVX512 || f == "avx512f"
					c.FMA = c.FMA || f == "fma"
				}
			}
		}
	}
	if c.Threads == 0 || c.MHz == 0 {
		return c, fmt.Errorf("bench: /proc/cpuinfo lists no processor with a clock")
	}
	return c, nil
}

// PeakGFLOPS is the theoretical peak of cores cores at the cpuinfo clock in
// GFLOP/s for float32 (bytes = 4) or float64 (bytes = 8), assuming two FMA
// pipes per core, each one vector wide (512 bits with AVX-512, 256 with
// AVX2), an FMA counting as 2 FLOPs. This holds for Zen 5 and Intel server
// cores with two 512-bit FMA units; Zen 4 executes 512-bit FMAs at half
// that rate. The clock is the nominal one: turbo raises the true peak.
func (c CPU) PeakGFLOPS(cores, bytes int) float64 {
	bits := 128
	switch {
	case c.AVX512:
		bits = 512
	case c.FMA:
		bits = 256
	}
	lanes := bits / (8 * bytes)
	return float64(cores) * c.MHz / 1e3 * 2 /* pipes */ * float64(lanes) * 2 /* FLOPs per FMA */
}

// Describe returns a one-paragraph description of the machine for results
// files: CPU, cores, clock, Go version, the commit the binary was built
// from (when known), date and load (uptime).
func Describe() string {
	var b strings.Builder
	if c, err := ReadCPU(); err == nil {
		fmt.Fprintf(&b, "CPU: %s (family %d), %d logical CPUs at %.0f MHz (cpuinfo), AVX-512 %v. ", c.Model, c.Family, c.Threads, c.MHz, c.AVX512)
	}
	fmt.Fprintf(&b, "%s %s/%s, GOMAXPROCS=%d (this process). ", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	if c := Commit(); c != "" {
		fmt.Fprintf(&b, "Commit: %s. ", c)
	}
	fmt.Fprintf(&b, "Date: %s. Load: %s", time.Now().UTC().Format("2006-01-02 15:04 UTC"), Uptime())
	return b.String()
}

// Commit returns the VCS revision the running binary was built from, with
// " (modified)" when the tree had uncommitted changes: what go build stamps
// into a binary built inside a git checkout. It is empty when unknown (go
// run and go test do not stamp it).
func Commit() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = " (modified)"
			}
		}
	}
	if rev == "" {
		return ""
	}
	if len(rev) > 12 {
		rev = rev[:12]
	}
	return rev + modified
}

// Uptime returns the output of uptime(1), or /proc/loadavg where uptime is
// missing; the load average says how noisy a timing is.
func Uptime() string {
	if out, err := exec.Command("uptime").Output(); err == nil {
		return strings.TrimSpace(string(out))
	}
	if b, err := os.ReadFile("/proc/loadavg"); err == nil {
		return "loadavg " + strings.TrimSpace(string(b))
	}
	return "unknown"
}
