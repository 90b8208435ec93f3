package train

import (
	"encoding/json"
	"math"
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
