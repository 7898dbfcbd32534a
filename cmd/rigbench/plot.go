package main

import (
	"fmt"
	"html"
	"io"
	"math"
	"strings"

	"github.com/HdrHistogram/hdrhistogram-go"
	"github.com/rig-go/rig/profile"
)

// series is one latency distribution to draw.
type series struct {
	name string
	h    *hdrhistogram.Histogram
}

// Plot's geometry, in SVG user units.
const (
	plotW, plotH                         = 800, 480
	marginL, marginR, marginT, marginB   = 80, 24, 48, 64
	plotPoints                           = 240
	maxNines                             = 5 // the x axis ends at 99.999%
	legendX, legendY, legendLine, legend = marginL + 16, marginT + 16, 18, 28
)

var plotColours = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// writePlot draws the latency distributions as an SVG image: latency, on a
// logarithmic axis, by percentile, on an axis of nines (0%, 90%, 99%,
// 99.9%, ...) as HdrHistogram's plots draw it, so that the tail is as
// wide as the body.
func writePlot(w io.Writer, title string, all []series) error {
	var ss []series
	var total int64
	lo, hi := int64(math.MaxInt64), int64(1)
	for _, s := range all {
		if s.h != nil && s.h.TotalCount() > 0 {
			ss = append(ss, s)
			total = max(total, s.h.TotalCount())
			lo, hi = min(lo, max(s.h.Min(), 1)), max(hi, s.h.Max())
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" font-size="15" text-anchor="middle">%s</text>`+"\n", plotW/2, marginT/2+5, html.EscapeString(title))
	if len(ss) == 0 {
		fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">no latency was measured</text>`+"\n", plotW/2, plotH/2)
		b.WriteString("</svg>\n")
		_, err := io.WriteString(w, b.String())
		return err
	}

	// The x axis: nines, up to what the count of values resolves.
	xmax := math.Min(maxNines, math.Max(2, math.Ceil(math.Log10(float64(total)))))
	// The y axis: whole decades around the values.
	ylo := math.Floor(math.Log10(float64(lo)))
	yhi := math.Ceil(math.Log10(float64(hi)))
	if yhi <= ylo {
		yhi = ylo + 1
	}
	x0, x1 := float64(marginL), float64(plotW-marginR)
	y0, y1 := float64(plotH-marginB), float64(marginT)
	px := func(nines float64) float64 { return x0 + (x1-x0)*nines/xmax }
	py := func(ns float64) float64 { return y0 - (y0-y1)*(math.Log10(math.Max(ns, 1))-ylo)/(yhi-ylo) }

	// Grid and ticks.
	b.WriteString(`<g stroke="#ddd" stroke-width="1">` + "\n")
	for n := 0.0; n <= xmax; n++ {
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", px(n), y0, px(n), y1)
	}
	for d := ylo; d <= yhi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > yhi+1e-9 {
				break
			}
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f"/>`+"\n", x0, py(v), x1, py(v))
		}
	}
	b.WriteString("</g>\n")
	fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#444"/>`+"\n", x0, y1, x1-x0, y0-y1)
	for n := 0.0; n <= xmax; n++ {
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", px(n), y0+18, nines(int(n)))
	}
	for d := ylo; d <= yhi; d++ {
		for _, m := range []float64{1, 2, 5} {
			v := m * math.Pow(10, d)
			if math.Log10(v) > yhi+1e-9 {
				break
			}
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", x0-6, py(v)+4, profile.Nanos(int64(v)))
		}
	}
	fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">percentile</text>`+"\n", (x0+x1)/2, plotH-18)
	fmt.Fprintf(&b, `<text transform="translate(18 %.1f) rotate(-90)" text-anchor="middle">latency, submit to reached point</text>`+"\n", (y0+y1)/2)

	// The series, and their legend.
	for i, s := range ss {
		colour := plotColours[i%len(plotColours)]
		b.WriteString(`<polyline fill="none" stroke-width="2" stroke="` + colour + `" points="`)
		for k := 0; k <= plotPoints; k++ {
			n := xmax * float64(k) / plotPoints
			q := 100 * (1 - math.Pow(10, -n))
			if k == plotPoints {
				q = 100
			}
			v := s.h.ValueAtQuantile(q)
			if k > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%.1f,%.1f", px(n), py(float64(v)))
		}
		b.WriteString(`"/>` + "\n")
		ly := float64(legendY + i*legendLine)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="%s" stroke-width="2"/>`+"\n", legendX, ly, legendX+legend, ly, colour)
		l := summarize(s.h)
		label := fmt.Sprintf("%s: p50 %s, p99 %s, max %s (%d values)", s.name, profile.Nanos(l.P50), profile.Nanos(l.P99), profile.Nanos(l.Max), l.Count)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f">%s</text>`+"\n", legendX+legend+6, ly+4, html.EscapeString(label))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

// nines labels the percentile with n nines: "0%", "90%", "99%", "99.9%".
func nines(n int) string {
	switch n {
	case 0:
		return "0%"
	case 1:
		return "90%"
	case 2:
		return "99%"
	}
	return "99." + strings.Repeat("9", n-2) + "%"
}
