package synthetic

import (
	"fmt"
	"strings"
)

// PresetTable is the table of the sweeps' two presets that examples/synthetic's
// usage prints: a header row, the full preset and the quick one.
func PresetTable() string {
	rows := []string{presetRow("preset", "L (fig2, fig4)", "epochs", "fig3", "seeds", "M", "time")}
	for _, p := range []struct {
		name, time string
		p          Preset
	}{{"full", "~2.5 h CPU (-plan)", FullPreset}, {"-quick", "~70 s CPU", QuickPreset}} {
		rows = append(rows, presetRow(p.name, joinInts(p.p.Ls), p.p.Epochs, fmt.Sprintf("L=%d, %d ep", p.p.CurveL, p.p.CurveEpochs), p.p.Seeds, p.p.M, p.time))
	}
	return strings.Join(rows, "\n")
}

func presetRow(a ...any) string {
	return fmt.Sprintf("  %-8v %-28v %-7v %-15v %-6v %-5v %v", a...)
}

func joinInts(v []int) string {
	s := make([]string, len(v))
	for i, x := range v {
		s[i] = fmt.Sprint(x)
	}
	return strings.Join(s, ",")
}
