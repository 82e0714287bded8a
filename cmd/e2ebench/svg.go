package main

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
)

// chartSeries is one line of the chart: a configuration's progress points.
type chartSeries struct {
	Name   string
	Color  string
	Points []progressPoint
}

// Chart geometry.
const (
	chartW      = 900
	panelH      = 230
	marginL     = 80
	marginR     = 270
	marginT     = 50
	panelGap    = 60
	marginB     = 50
	chartTicks  = 5
	chartHeight = marginT + 2*panelH + panelGap + marginB
)

var seriesColors = map[string]string{
	kindElectrum:  "#1f77b4",
	kindAddrIndex: "#d62728",
	kindTxIndex:   "#2ca02c",
}

// writeCatchupChart writes the chart of the first run of each configuration.
func writeCatchupChart(path string, ci *chainInfo, runs []catchupRun, kinds []string) error {
	var series []chartSeries
	for _, k := range kinds {
		for _, r := range runs {
			if r.Kind == k {
				series = append(series, chartSeries{Name: fmt.Sprintf("%s (run %d)", kindLabel(k), r.Run),
					Color: seriesColors[k], Points: r.Progress})
				break
			}
		}
	}
	var buf bytes.Buffer
	title := fmt.Sprintf("Index catch-up, %s chain of %d tx: speed and resident memory over height", ci.Network, ci.Txs)
	if err := writeChart(&buf, title, ci.TipHeight, series); err != nil {
		return err
	}
	return os.WriteFile(path, buf.Bytes(), 0o644)
}

// writeChart writes an SVG of two panels sharing the x axis (block height,
// 0 to maxHeight): tx/s on top, resident memory below, one polyline per
// series in each.
func writeChart(w io.Writer, title string, maxHeight int32, series []chartSeries) error {
	var maxRate, maxRSS float64
	xMax := float64(maxHeight)
	for _, s := range series {
		for _, p := range s.Points {
			maxRate = math.Max(maxRate, p.TxPerSec)
			maxRSS = math.Max(maxRSS, p.RSSMiB)
			xMax = math.Max(xMax, float64(p.Height))
		}
	}
	if xMax <= 0 {
		xMax = 1
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n",
		chartW, chartHeight, chartW, chartHeight)
	fmt.Fprintf(&b, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	fmt.Fprintf(&b, `<text x="%d" y="24" font-size="15" font-weight="bold">%s</text>`+"\n", marginL, esc(title))

	panels := []struct {
		label string
		max   float64
		val   func(progressPoint) float64
	}{
		{"transactions per second", maxRate, func(p progressPoint) float64 { return p.TxPerSec }},
		{"resident memory (MiB)", maxRSS, func(p progressPoint) float64 { return p.RSSMiB }},
	}
	plotW := float64(chartW - marginL - marginR)
	for i, pn := range panels {
		top := float64(marginT + i*(panelH+panelGap))
		yMax := niceCeil(pn.max)
		x := func(h float64) float64 { return marginL + h/xMax*plotW }
		y := func(v float64) float64 { return top + panelH - v/yMax*panelH }
		fmt.Fprintf(&b, `<g class="panel" id="panel-%d">`+"\n", i)
		fmt.Fprintf(&b, `<rect x="%d" y="%.0f" width="%.0f" height="%d" fill="none" stroke="#999"/>`+"\n", marginL, top, plotW, panelH)
		for t := 0; t <= chartTicks; t++ {
			v := yMax * float64(t) / chartTicks
			fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%.0f" y2="%.1f" stroke="#eee"/>`+"\n", marginL, y(v), marginL+plotW, y(v))
			fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", marginL-6, y(v)+4, fmtTick(v))
			h := math.Round(xMax * float64(t) / chartTicks) // heights are whole
			fmt.Fprintf(&b, `<text x="%.1f" y="%.0f" text-anchor="middle">%s</text>`+"\n", x(h), top+panelH+16, fmtTick(h))
		}
		fmt.Fprintf(&b, `<text x="16" y="%.0f" transform="rotate(-90 16 %.0f)" text-anchor="middle">%s</text>`+"\n",
			top+panelH/2, top+panelH/2, esc(pn.label))
		fmt.Fprintf(&b, `<text x="%.0f" y="%.0f" text-anchor="middle">block height</text>`+"\n", marginL+plotW/2, top+panelH+34)
		for _, s := range series {
			var pts []string
			for _, p := range s.Points {
				pts = append(pts, fmt.Sprintf("%.1f,%.1f", x(float64(p.Height)), y(pn.val(p))))
			}
			fmt.Fprintf(&b, `<polyline data-series="%s" fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n",
				esc(s.Name), s.Color, strings.Join(pts, " "))
			for _, pt := range pts {
				cx, cy, _ := strings.Cut(pt, ",")
				fmt.Fprintf(&b, `<circle cx="%s" cy="%s" r="2" fill="%s"/>`+"\n", cx, cy, s.Color)
			}
		}
		b.WriteString("</g>\n")
	}
	for i, s := range series {
		ly := marginT + 10 + i*20
		lx := chartW - marginR + 14
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", lx, ly, lx+20, ly, s.Color)
		fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="11">%s</text>`+"\n", lx+26, ly+4, esc(s.Name))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten (1 for v <= 0).
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if v <= m*p {
			return m * p
		}
	}
	return 10 * p
}

// fmtTick formats an axis value: 12k, 1.5M, 250.
func fmtTick(v float64) string {
	switch {
	case v >= 1e6:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e6), ".0") + "M"
	case v >= 1e4:
		return fmt.Sprintf("%.0fk", v/1e3)
	case v >= 1e3:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v/1e3), ".0") + "k"
	default:
		return strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0")
	}
}

func esc(s string) string {
	var b bytes.Buffer
	xml.EscapeText(&b, []byte(s))
	return b.String()
}
