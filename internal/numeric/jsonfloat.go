package numeric

import (
	"encoding/json"
	"math"
)

// JSONFloat is a float64 that encodes NaN and ±Inf as JSON null, which
// encoding/json refuses, and decodes null as NaN: metrics such as an
// oracle that a task does not know can then be written and read back.
type JSONFloat float64

// MarshalJSON writes f, or null when f is NaN or infinite.
func (f JSONFloat) MarshalJSON() ([]byte, error) {
	if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
		return []byte("null"), nil
	}
	return json.Marshal(float64(f))
}

// UnmarshalJSON reads a number, or null as NaN.
func (f *JSONFloat) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*f = JSONFloat(math.NaN())
		return nil
	}
	var v float64
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*f = JSONFloat(v)
	return nil
}
