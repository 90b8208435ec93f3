package bench

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Timing summarises repeated runs of a step: wall-clock time and the CPU
// time of the whole process (user + system, every thread: with GOMAXPROCS=1
// the step's own work plus the garbage collector's).
//
// CPU time is the robust measure on a shared, overloaded machine: a
// process waiting for a core accrues wall time but no CPU time. Wall time is
// what a user waits; on a quiet machine with one thread the two agree.
type Timing struct {
	Steps  int           // timed steps
	Median time.Duration // median wall time of a step
	Mean   time.Duration
	Min    time.Duration
	// CPUMedian and CPUMean are the median and mean process CPU time of a
	// step (0 where getrusage is unavailable).
	CPUMedian, CPUMean time.Duration
}

// Measure runs step warmup times untimed, then times it step by step until
// it has run at least minSteps times and for at least minTime (and at most
// maxSteps times, if maxSteps > 0). It returns the first error.
func Measure(step func() error, warmup, minSteps, maxSteps int, minTime time.Duration) (Timing, error) {
	for i := 0; i < warmup; i++ {
		if err := step(); err != nil {
			return Timing{}, err
		}
	}
	var ds, cs []time.Duration
	var total, cpuTotal time.Duration
	for len(ds) < minSteps || total < minTime {
		if maxSteps > 0 && len(ds) >= maxSteps {
			break
		}
		c0 := CPUTime()
		t0 := time.Now()
		if err := step(); err != nil {
			return Timing{}, err
		}
		d := time.Since(t0)
		c := CPUTime() - c0
		ds, cs = append(ds, d), append(cs, c)
		total, cpuTotal = total+d, cpuTotal+c
	}
	if len(ds) == 0 {
		return Timing{}, errors.New("bench: Measure: no step timed (minSteps and minTime are 0)")
	}
	n := time.Duration(len(ds))
	return Timing{Steps: len(ds), Median: Median(ds), Mean: total / n, Min: slices.Min(ds),
		CPUMedian: Median(cs), CPUMean: cpuTotal / n}, nil
}

// Median returns the median of ds (the mean of the middle two for an even
// count), 0 for none.
func Median[T ~int64 | ~float64](ds []T) T {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// heapMetric is the Go runtime's count of bytes in heap objects, live or
// not yet swept: what the heap holds at an instant.
const heapMetric = "/memory/classes/heap/objects:bytes"

// PeakMeter measures the peak memory of a stretch of code in two ways:
//
//   - peak heap: a goroutine reads the runtime/metrics value
//     "/memory/classes/heap/objects:bytes" (bytes in heap objects, live or
//     awaiting sweep) every interval and keeps the maximum, a lower bound of
//     the true peak within one interval's allocation (1 ms by default);
//   - peak RSS: Start collects garbage and returns freed memory to the OS
//     (runtime.GC, then debug.FreeOSMemory),
//     then resets the kernel's resident-set high-water mark by writing "5"
//     to /proc/self/clear_refs; Stop reads VmHWM from /proc/self/status.
//     It counts everything resident: the compiled graph's tensors, the
//     runtime, the binary. Where clear_refs cannot be written (non-Linux,
//     restricted /proc) RSS reads 0 and RSSReset is false.
//
// The sampler costs one metrics read per interval (about a microsecond);
// with GOMAXPROCS=1 it takes its slice of the single thread, well under 1%.
type PeakMeter struct {
	interval time.Duration
	stop     chan struct{}
	done     sync.WaitGroup
	peak     uint64
	sample   []metrics.Sample // reused: the sampler allocates nothing
	RSSReset bool
}

// StartPeak starts a PeakMeter sampling every interval (0 means 1 ms).
func StartPeak(interval time.Duration) *PeakMeter {
	if interval <= 0 {
		interval = time.Millisecond
	}
	// Two collections: an object with a finalizer survives the first. The
	// second (in FreeOSMemory) also returns the freed pages to the OS.
	runtime.GC()
	debug.FreeOSMemory()
	p := &PeakMeter{interval: interval, stop: make(chan struct{}), sample: []metrics.Sample{{Name: heapMetric}}}
	p.RSSReset = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0) == nil
	p.peak = p.readHeap()
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		t := time.NewTicker(interval)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				if h := p.readHeap(); h > p.peak {
					p.peak = h
				}
			}
		}
	}()
	return p
}

// Stop ends the measurement and returns the peak heap and the peak RSS in
// bytes (RSS 0 if it could not be measured).
func (p *PeakMeter) Stop() (heap, rss uint64) {
	close(p.stop)
	p.done.Wait()
	if h := p.readHeap(); h > p.peak {
		p.peak = h
	}
	if p.RSSReset {
		rss, _ = ReadHWM()
	}
	return p.peak, rss
}

func (p *PeakMeter) readHeap() uint64 {
	metrics.Read(p.sample)
	if p.sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return p.sample[0].Value.Uint64()
}

// ReadHWM returns the process's peak resident set size (VmHWM in
// /proc/self/status) in bytes.
func ReadHWM() (uint64, error) {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	return parseStatusKB(b, "VmHWM:")
}

func parseStatusKB(status []byte, key string) (uint64, error) {
	for _, line := range bytes.Split(status, []byte("\n")) {
		s := string(line)
		if !strings.HasPrefix(s, key) {
			continue
		}
		f := strings.Fields(strings.TrimPrefix(s, key))
		if len(f) != 2 || f[1] != "kB" {
			return 0, fmt.Errorf("bench: unexpected %q line %q", key, s)
		}
		kb, err := strconv.ParseUint(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("bench: %q line %q: %w", key, s, err)
		}
		return kb * 1024, nil
	}
	return 0, fmt.Errorf("bench: no %q line in /proc/self/status", key)
}

// MB converts bytes to megabytes (10^6 bytes), the unit of the tables.
func MB(b uint64) float64 { return float64(b) / 1e6 }
