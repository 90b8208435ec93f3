package sweep

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

func TestPointJSON(t *testing.T) {
	p := Point{Panel: "p", Series: "s", X: 2, Seeds: 0, Top1: NewStat(nil), Oracle: math.NaN()}
	b, err := json.Marshal(p)
	if err != nil {
		t.Fatalf("point with NaN: %v", err)
	}
	if !strings.Contains(string(b), `"oracle":null`) || !strings.Contains(string(b), `"mean":null`) {
		t.Errorf("point JSON %s: want NaNs as null", b)
	}
}

func TestWritePointsCSV(t *testing.T) {
	var buf bytes.Buffer
	pts := []Point{{Panel: "rbf", Series: "GD, 1 step", X: 2048, Seeds: 2, Top1: NewStat([]float64{0.5, 0.7}), NLL: NewStat([]float64{1, 1}), Oracle: 0.8}}
	if err := WritePointsCSV(&buf, pts); err != nil {
		t.Fatal(err)
	}
	want := "panel,series,x,seeds,top1_mean,top1_std,nll_mean,nll_std,oracle\n" +
		"rbf,\"GD, 1 step\",2048,2,0.6,0.141421,1,0,0.8\n"
	if buf.String() != want {
		t.Errorf("got\n%s\nwant\n%s", buf.String(), want)
	}
}
