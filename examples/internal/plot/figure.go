package plot

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Panel is one cell of a [Figure]: [Lines] and [Heatmap] implement it, and
// so can any type that builds a gonum plot.
type Panel interface {
	Plot() (*gplot.Plot, error)
}

var (
	_ Panel = Lines{}
	_ Panel = Heatmap{}
)

// DPI is the resolution of raster (PNG, JPEG) output.
const DPI = 110

// Default panel size.
const (
	DefaultPanelWidth  = 11 * vg.Centimeter
	DefaultPanelHeight = 8 * vg.Centimeter
)

// Figure is a grid of panels saved as one image.
type Figure struct {
	// Title, if non-empty, is written centred above the panels.
	Title string
	// Panels[r][c] is the panel in row r, column c; rows may differ in
	// length and nil panels leave their cell empty. The grid has as many
	// columns as the longest row.
	Panels [][]Panel
	// PanelWidth and PanelHeight are the size of one cell (defaults
	// DefaultPanelWidth and DefaultPanelHeight).
	PanelWidth, PanelHeight vg.Length
}

// Save writes the figure to path, creating its directory; the format
// follows the extension: .png, .jpg/.jpeg, .svg or .pdf. The file is
// written whole or not at all (through a temporary file and a rename).
func (f Figure) Save(path string) error {
	format := strings.ToLower(strings.TrimPrefix(filepath.Ext(path), "."))
	var buf bytes.Buffer
	if err := f.WriteTo(&buf, format); err != nil {
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".plot-*")
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	_, err = tmp.Write(buf.Bytes())
	if err == nil {
		err = tmp.Chmod(0o644) // CreateTemp makes 0600
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		os.Remove(tmp.Name())
		return fmt.Errorf("plot: %s: %w", path, err)
	}
	return nil
}

// WriteTo renders the figure in format ("png", "jpg", "jpeg", "svg" or
// "pdf") to w.
func (f Figure) WriteTo(w io.Writer, format string) error {
	rows := len(f.Panels)
	cols := 0
	for _, r := range f.Panels {
		cols = max(cols, len(r))
	}
	if rows == 0 || cols == 0 {
		return fmt.Errorf("figure has no panels")
	}
	pw, ph := f.PanelWidth, f.PanelHeight
	if pw <= 0 {
		pw = DefaultPanelWidth
	}
	if ph <= 0 {
		ph = DefaultPanelHeight
	}
	titleH := vg.Length(0)
	var title text.Style
	if f.Title != "" {
		title = gplot.New().Title.TextStyle
		title.Font.Size = vg.Points(13)
		title.XAlign, title.YAlign = draw.XCenter, draw.YCenter
		titleH = title.Height(f.Title) + vg.Points(6)
	}
	width, height := pw*vg.Length(cols), ph*vg.Length(rows)+titleH

	// Build every plot first, so a bad panel fails before any drawing.
	plots := make([][]*gplot.Plot, rows)
	bars := make([][]*gplot.Plot, rows)
	for r, row := range f.Panels {
		plots[r] = make([]*gplot.Plot, cols)
		bars[r] = make([]*gplot.Plot, cols)
		for c, p := range row {
			if p == nil {
				continue
			}
			var err error
			if plots[r][c], err = p.Plot(); err != nil {
				return fmt.Errorf("panel (%d, %d): %w", r, c, err)
			}
			if cb, ok := p.(interface{ colorBar() (*gplot.Plot, error) }); ok {
				if bars[r][c], err = cb.colorBar(); err != nil {
					return fmt.Errorf("panel (%d, %d): %w", r, c, err)
				}
			}
		}
	}

	var canvas vg.CanvasWriterTo
	switch format {
	case "png", "jpg", "jpeg":
		img := vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(DPI))
		if format == "png" {
			canvas = vgimg.PngCanvas{Canvas: img}
		} else {
			canvas = vgimg.JpegCanvas{Canvas: img}
		}
	case "svg":
		canvas = vgsvg.New(width, height)
	case "pdf":
		canvas = vgpdf.New(width, height)
	default:
		return fmt.Errorf("unknown image format %q (want png, jpg, svg or pdf)", format)
	}
	full := draw.New(canvas)
	dc := draw.Crop(full, 0, 0, 0, -titleH)
	tiles := draw.Tiles{
		Rows: rows, Cols: cols,
		PadX: vg.Points(14), PadY: vg.Points(10),
		PadTop: vg.Points(4), PadBottom: vg.Points(4), PadLeft: vg.Points(4), PadRight: vg.Points(8),
	}
	cells := gplot.Align(plots, tiles, dc)
	for r := range plots {
		for c, p := range plots[r] {
			if p == nil {
				continue
			}
			cell := cells[r][c]
			if cb := bars[r][c]; cb != nil {
				// The bar takes the right eighth of the cell, spanning
				// the heatmap's data area vertically.
				barW := (cell.Max.X - cell.Min.X) / 8
				bar := draw.Crop(cell, cell.Max.X-cell.Min.X-barW, 0, 0, 0)
				cell = draw.Crop(cell, 0, -barW-vg.Points(6), 0, 0)
				data := p.DataCanvas(cell)
				cb.Draw(draw.Crop(bar, 0, 0, data.Min.Y-bar.Min.Y, data.Max.Y-bar.Max.Y))
			}
			p.Draw(cell)
		}
	}
	if f.Title != "" {
		// After the panels, whose backgrounds would cover it.
		full.FillText(title, vg.Point{X: width / 2, Y: height - titleH/2}, f.Title)
	}
	_, err := canvas.WriteTo(w)
	return err
}
