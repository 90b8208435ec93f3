package train

import (
	"encoding/json"
	"math"

	"github.com/gdattn/gdattn/internal/numeric"
)

// jsonFloat encodes NaN and ±Inf as null (numeric.JSONFloat).
type jsonFloat = numeric.JSONFloat

type metricsJSON struct {
	Top1    jsonFloat `json:"top1"`
	NLL     jsonFloat `json:"nll"`
	Oracle  jsonFloat `json:"oracle"`
	N       int       `json:"n"`
	Seconds float64   `json:"seconds"`
}

// metricsRealJSON is the JSON form of a real-valued model's metrics.
type metricsRealJSON struct {
	MSE     jsonFloat `json:"mse"`
	Oracle  jsonFloat `json:"oracle"`
	N       int       `json:"n"`
	Seconds float64   `json:"seconds"`
}

// MarshalJSON writes the metrics with lower-case keys: top1, nll, oracle,
// n and seconds, or for a real-valued model mse, oracle, n and seconds;
// NaN (an oracle without true probabilities) is written as null.
func (m Metrics) MarshalJSON() ([]byte, error) {
	if m.Regression {
		return json.Marshal(toRealJSON(m))
	}
	return json.Marshal(toJSON(m))
}

func toRealJSON(m Metrics) metricsRealJSON {
	return metricsRealJSON{jsonFloat(m.MSE), jsonFloat(m.Oracle), m.N, m.Seconds}
}

func (j metricsRealJSON) metrics() Metrics {
	return Metrics{Top1: math.NaN(), NLL: math.NaN(), MSE: float64(j.MSE), Regression: true,
		Oracle: float64(j.Oracle), N: j.N, Seconds: j.Seconds}
}

// isReal reports whether a metrics object holds the key "mse".
func isReal(b []byte) bool {
	var keys map[string]json.RawMessage
	if json.Unmarshal(b, &keys) != nil {
		return false
	}
	_, ok := keys["mse"]
	return ok
}

func toJSON(m Metrics) metricsJSON {
	return metricsJSON{jsonFloat(m.Top1), jsonFloat(m.NLL), jsonFloat(m.Oracle), m.N, m.Seconds}
}

func (j metricsJSON) metrics() Metrics {
	return Metrics{Top1: float64(j.Top1), NLL: float64(j.NLL), Oracle: float64(j.Oracle), N: j.N, Seconds: j.Seconds}
}

// UnmarshalJSON reads what MarshalJSON writes (null as NaN).
func (m *Metrics) UnmarshalJSON(b []byte) error {
	if isReal(b) {
		var j metricsRealJSON
		if err := json.Unmarshal(b, &j); err != nil {
			return err
		}
		*m = j.metrics()
		return nil
	}
	var j metricsJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*m = j.metrics()
	return nil
}

// MarshalJSON writes the epoch metrics flat: {"epoch", "train_loss", "top1", ...}.
// (Without it the promoted Metrics.MarshalJSON would drop Epoch and TrainLoss.)
func (e EpochMetrics) MarshalJSON() ([]byte, error) {
	if e.Regression {
		return json.Marshal(struct {
			Epoch     int       `json:"epoch"`
			TrainLoss jsonFloat `json:"train_loss"`
			metricsRealJSON
		}{e.Epoch, jsonFloat(e.TrainLoss), toRealJSON(e.Metrics)})
	}
	return json.Marshal(struct {
		Epoch     int       `json:"epoch"`
		TrainLoss jsonFloat `json:"train_loss"`
		metricsJSON
	}{e.Epoch, jsonFloat(e.TrainLoss), toJSON(e.Metrics)})
}

// UnmarshalJSON reads what MarshalJSON writes.
func (e *EpochMetrics) UnmarshalJSON(b []byte) error {
	if isReal(b) {
		var j struct {
			Epoch     int       `json:"epoch"`
			TrainLoss jsonFloat `json:"train_loss"`
			metricsRealJSON
		}
		if err := json.Unmarshal(b, &j); err != nil {
			return err
		}
		*e = EpochMetrics{Epoch: j.Epoch, TrainLoss: float64(j.TrainLoss), Metrics: j.metricsRealJSON.metrics()}
		return nil
	}
	var j struct {
		Epoch     int       `json:"epoch"`
		TrainLoss jsonFloat `json:"train_loss"`
		metricsJSON
	}
	if err := json.Unmarshal(b, &j); err != nil {
		return err
	}
	*e = EpochMetrics{Epoch: j.Epoch, TrainLoss: float64(j.TrainLoss), Metrics: j.metricsJSON.metrics()}
	return nil
}
