package main

import (
	"fmt"
	"strings"

	"github.com/gdattn/gdattn/bench"
)

// gpuPeak is a GPU model's float32 peak without tensor cores (the FP32
// figure of NVIDIA's datasheets, at the boost clock), the rate the steps'
// float32 products can reach: cuBLAS's SGEMM does not use TF32 tensor cores
// unless asked (cuda never asks), and the PyTorch peer sets TF32 off.
type gpuPeak struct {
	match  []string // substrings of the GPU's name (nvidia-smi's, the backend's), any one
	model  string
	tflops float64
}

// gpuPeaks are the GPUs gdattn targets, the more specific names first
// (datasheets: H200 SXM and NVL, H100 SXM, PCIe and NVL, A100 SXM4 and
// PCIe, V100 SXM2, PCIe and V100S).
var gpuPeaks = []gpuPeak{
	{[]string{"H200 NVL"}, "H200 NVL", 60},
	{[]string{"H200"}, "H200 SXM", 67},
	{[]string{"H100 NVL"}, "H100 NVL", 60},
	{[]string{"H100 PCIe"}, "H100 PCIe", 51},
	{[]string{"H100"}, "H100 SXM", 67},
	{[]string{"A100"}, "A100", 19.5},
	{[]string{"V100S"}, "V100S PCIe", 16.4},
	{[]string{"V100-PCIE", "V100 PCIe"}, "V100 PCIe", 14},
	{[]string{"V100"}, "V100 SXM2", 15.7},
}

// fp32Peak returns the model and float32 peak in TFLOP/s of the GPU whose
// name (nvidia-smi's, or the backend's, which starts with it) is name;
// ok is false for a GPU not in gpuPeaks.
func fp32Peak(name string) (model string, tflops float64, ok bool) {
	low := strings.ToLower(name)
	for _, p := range gpuPeaks {
		for _, m := range p.match {
			if strings.Contains(low, strings.ToLower(m)) {
				return p.model, p.tflops, true
			}
		}
	}
	return "", 0, false
}

// stepFLOPs returns the counted floating-point operations of one training
// step of the workload named n (bench.FLOPs: the language models' products,
// forward and backward); 0 where bench counts none (the in-context models)
// or n is no workload.
func stepFLOPs(n string) float64 {
	w, err := bench.FindWorkload(n)
	if err != nil {
		return 0
	}
	return bench.FLOPs(w, bench.Train)
}

// peakShare describes a step of flops operations taking ms milliseconds on
// the GPU named gpu: its rate in TFLOP/s and, for a GPU in gpuPeaks, the
// fraction of the float32 peak, e.g. "14.2 TFLOP/s, 0.212 of the H100
// SXM's float32 peak of 67". "" without flops or a time.
func peakShare(flops, ms float64, gpu string) string {
	if flops <= 0 || !(ms > 0) {
		return ""
	}
	rate := flops / (ms / 1e3) / 1e12
	s := fmt.Sprintf("%.1f TFLOP/s", rate)
	if model, peak, ok := fp32Peak(gpu); ok {
		s += fmt.Sprintf(", %.3f of the %s's float32 peak of %g", rate/peak, model, peak)
	}
	return s
}
