package main

import (
	"bytes"
	"encoding/xml"
	"io"
	"strings"
	"testing"
)

// svgElements parses an SVG document and counts its elements by name; it
// fails the test where the document is not well-formed XML with an svg
// root.
func svgElements(t *testing.T, doc []byte) map[string]int {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(doc))
	count := map[string]int{}
	root := ""
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, doc)
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
			}
			count[se.Name.Local]++
		}
	}
	if root != "svg" {
		t.Fatalf("the root is %q, not svg", root)
	}
	return count
}

func TestWritePlot(t *testing.T) {
	a, b := newLatencyFor(3), newLatencyFor(3)
	for i := range 10_000 {
		a.record(0, int64(1000+i))
		b.record(0, int64(500+i%300))
	}
	a.record(0, 9_000_000)
	var buf bytes.Buffer
	if err := writePlot(&buf, "rigbench <empty> & co", []series{{"rig", a.merged()}, {"baseline", b.merged()}}); err != nil {
		t.Fatal(err)
	}
	n := svgElements(t, buf.Bytes())
	if n["polyline"] != 2 {
		t.Errorf("%d polylines, want 2", n["polyline"])
	}
	s := buf.String()
	for _, want := range []string{"rigbench &lt;empty&gt; &amp; co", "99.9%", "99.99%", "percentile", "rig: p50", "baseline: p50"} {
		if !strings.Contains(s, want) {
			t.Errorf("the plot lacks %q", want)
		}
	}
	// Each polyline has its points, in order along x.
	for _, line := range strings.Split(s, "\n") {
		if !strings.HasPrefix(line, "<polyline") {
			continue
		}
		pts := strings.Fields(line[strings.Index(line, `points="`)+8 : strings.LastIndex(line, `"`)])
		if len(pts) != plotPoints+1 {
			t.Errorf("%d points, want %d", len(pts), plotPoints+1)
		}
	}
}

func TestWritePlotEmpty(t *testing.T) {
	var buf bytes.Buffer
	if err := writePlot(&buf, "nothing", []series{{"rig", newLatencyFor(3).merged()}}); err != nil {
		t.Fatal(err)
	}
	if n := svgElements(t, buf.Bytes()); n["polyline"] != 0 || !strings.Contains(buf.String(), "no latency") {
		t.Errorf("an empty plot: %s", buf.String())
	}
}
