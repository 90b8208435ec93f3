package main

import (
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	in := `goos: linux
BenchmarkGDTrainStep/blocks=1/float32         	     100	   4600000 ns/op	         4.500 cpu-ms/op	        47.00 peak-RSS-MB	        28.30 peak-heap-MB	 5289091 B/op	    2151 allocs/op
BenchmarkGDTrainStep/blocks=1/float32         	     100	   4800000 ns/op	         4.700 cpu-ms/op	        49.00 peak-RSS-MB	        28.50 peak-heap-MB	 5289091 B/op	    2151 allocs/op
BenchmarkLMTrainStep/preset=small/model=gpt/float32  	       2	7838079979 ns/op	         1.283 GFLOP/s	 295695032 B/op	   25675 allocs/op
PASS
`
	var out strings.Builder
	if err := run(strings.NewReader(in), &out); err != nil {
		t.Fatal(err)
	}
	want := `| benchmark | ms/step | CPU ms/step | allocs/step | alloc MB/step | peak heap MB | peak RSS MB | GFLOP/s | GFLOP/CPU-s |
|---|---:|---:|---:|---:|---:|---:|---:|---:|
| GDTrainStep/blocks=1/float32 | 4.7 | 4.6 | 2151 | 5.29 | 28 | 48 | | |
| LMTrainStep/preset=small/model=gpt/float32 | 7838 | | 25675 | 296 | | | 1.28 | |
`
	if out.String() != want {
		t.Errorf("got\n%s\nwant\n%s", out.String(), want)
	}
	if err := run(strings.NewReader("PASS\n"), &out); err == nil {
		t.Error("no results: got nil error")
	}
}
