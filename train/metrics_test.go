package train

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"
)

func TestMetricsJSON(t *testing.T) {
	in := EpochMetrics{Epoch: 3, TrainLoss: 1.25, Metrics: Metrics{Top1: 0.5, NLL: 1.5, Oracle: math.NaN(), N: 7, Seconds: 0.5}}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	want := `{"epoch":3,"train_loss":1.25,"top1":0.5,"nll":1.5,"oracle":null,"n":7,"seconds":0.5}`
	if string(b) != want {
		t.Errorf("got %s, want %s", b, want)
	}
	var out EpochMetrics
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	if out.Epoch != 3 || out.TrainLoss != 1.25 || out.Top1 != 0.5 || !math.IsNaN(out.Oracle) || out.N != 7 {
		t.Errorf("round trip: got %+v", out)
	}
}

func TestMetricsString(t *testing.T) {
	e := EpochMetrics{Epoch: 3, TrainLoss: 1.25, Metrics: Metrics{Top1: 0.5, NLL: 1.5, Oracle: math.NaN(), N: 7}}
	want := "epoch 3  train loss 1.2500  top-1 0.5000  NLL 1.5000  oracle unknown  (7 contexts)"
	if got := fmt.Sprintf("%v", e); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	e.Oracle = 0.75
	if got := e.Metrics.String(); !strings.Contains(got, "oracle 0.7500") {
		t.Errorf("got %q, want the oracle printed", got)
	}
}
