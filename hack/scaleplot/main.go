// Copyright 2026 The KubeStellar Authors.
//
// Licensed under the Apache License, Version 2.0 (the "License");
// you may not use this file except in compliance with the License.
// You may obtain a copy of the License at
//
//     http://www.apache.org/licenses/LICENSE-2.0
//
// Unless required by applicable law or agreed to in writing, software
// distributed under the License is distributed on an "AS IS" BASIS,
// WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
// See the License for the specific language governing permissions and
// limitations under the License.

// Command scaleplot draws the kcp scale figures of docs/performance.md as an
// SVG image: one panel per figure, each against the number of workspaces.
// It reads the tab-separated figures that BenchmarkKCPWorkspaces runs gave
// (a header line naming the columns, the first being "workspaces"; "-" for
// a figure a run did not reach), one file a series, named by a "# series: <name>" line, and writes the image;
// `make generate` runs it, and `make verify` fails when the image is not
// what the figures make.
//
//	go run ./hack/scaleplot docs/figures/kcp-scale.tsv docs/figures/kcp-scale-2.tsv docs/figures/kcp-scale.svg
package main

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"math"
	"os"
	"sort"
	"strconv"
	"strings"
)

// Panel geometry, in SVG user units.
const (
	panelWidth  = 300
	panelHeight = 220
	marginLeft  = 56
	marginRight = 16
	marginTop   = 36
	marginBelow = 44
	columns     = 3
	legendRow   = 18
	seriesMark  = "# series:"
	// missing stands for a figure a run did not reach; it is not drawn.
	missing = "-"
)

// colors are the series' colors, in the order of the files.
var colors = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd"}

// table is one series of figures: its name, a column name per figure, the
// rows' values.
type table struct {
	series string
	names  []string
	rows   [][]float64
}

func main() {
	if len(os.Args) < 3 || len(os.Args) > 2+len(colors) {
		fmt.Fprintf(os.Stderr, "usage: scaleplot <figures.tsv>... <image.svg> (at most %d series)\n", len(colors))
		os.Exit(2)
	}
	if err := run(os.Args[1:len(os.Args)-1], os.Args[len(os.Args)-1]); err != nil {
		fmt.Fprintln(os.Stderr, "scaleplot:", err)
		os.Exit(1)
	}
}

func run(ins []string, out string) error {
	var tables []*table
	for _, in := range ins {
		data, err := os.ReadFile(in)
		if err != nil {
			return err
		}
		t, err := parse(data)
		if err != nil {
			return fmt.Errorf("%s: %w", in, err)
		}
		if t.series == "" {
			t.series = in
		}
		if len(tables) > 0 && strings.Join(t.names, "\t") != strings.Join(tables[0].names, "\t") {
			return fmt.Errorf("%s: its header differs from %s's", in, ins[0])
		}
		tables = append(tables, t)
	}
	return os.WriteFile(out, render(tables), 0o644)
}

// parse reads the figures; lines starting with # are comments, but for the
// series' name.
func parse(data []byte) (*table, error) {
	t := &table{}
	scanner := bufio.NewScanner(bytes.NewReader(data))
	for line := 1; scanner.Scan(); line++ {
		text := strings.TrimSpace(scanner.Text())
		if name, ok := strings.CutPrefix(text, seriesMark); ok {
			t.series = strings.TrimSpace(name)
			continue
		}
		if text == "" || strings.HasPrefix(text, "#") {
			continue
		}
		fields := strings.Split(text, "\t")
		if t.names == nil {
			if fields[0] != "workspaces" || len(fields) < 2 {
				return nil, fmt.Errorf("line %d: the header must start with workspaces and name a figure", line)
			}
			t.names = fields
			continue
		}
		if len(fields) != len(t.names) {
			return nil, fmt.Errorf("line %d: %d fields, the header has %d", line, len(fields), len(t.names))
		}
		row := make([]float64, len(fields))
		for i, f := range fields {
			if f == missing && i > 0 {
				row[i] = math.NaN()
				continue
			}
			v, err := strconv.ParseFloat(f, 64)
			if err != nil || v < 0 || math.IsInf(v, 0) || math.IsNaN(v) {
				return nil, fmt.Errorf("line %d: %q is not a figure", line, f)
			}
			row[i] = v
		}
		t.rows = append(t.rows, row)
	}
	if err := scanner.Err(); err != nil {
		return nil, err
	}
	if len(t.rows) == 0 {
		return nil, errors.New("no figures")
	}
	sort.SliceStable(t.rows, func(i, j int) bool { return t.rows[i][0] < t.rows[j][0] })
	return t, nil
}

// render draws one panel per figure column, the workspaces across, each
// series a line of its color, and the series' names above the panels, a
// row each.
func render(tables []*table) []byte {
	names := tables[0].names
	panels := len(names) - 1
	rows := (panels + columns - 1) / columns
	legend := len(tables) * legendRow
	width, height := columns*panelWidth, rows*panelHeight+legend
	var b bytes.Buffer
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="11">`+"\n",
		width, height, width, height)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", width, height)
	for i, t := range tables {
		fmt.Fprintf(&b, `<rect x="%d" y="%d" width="10" height="10" fill="%s"/>`+"\n", marginLeft, 5+i*legendRow, colors[i])
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", marginLeft+14, 14+i*legendRow, escape(t.series))
	}
	xMax := 0.0
	for _, t := range tables {
		for _, r := range t.rows {
			xMax = math.Max(xMax, r[0])
		}
	}
	xMax = niceCeiling(xMax)
	for p := range panels {
		col := p + 1
		ox, oy := float64((p%columns)*panelWidth), float64((p/columns)*panelHeight+legend)
		yMax := 0.0
		for _, t := range tables {
			for _, r := range t.rows {
				if !math.IsNaN(r[col]) {
					yMax = math.Max(yMax, r[col])
				}
			}
		}
		yMax = niceCeiling(yMax)
		left, top := ox+marginLeft, oy+marginTop
		w, h := float64(panelWidth-marginLeft-marginRight), float64(panelHeight-marginTop-marginBelow)
		x := func(v float64) float64 { return left + v/xMax*w }
		y := func(v float64) float64 { return top + h - v/yMax*h }
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" font-weight="bold">%s</text>`+"\n", left, oy+20, escape(names[col]))
		for i := 0; i <= 4; i++ {
			yv, xv := tick(yMax, i), tick(xMax, i)
			fmt.Fprintf(&b, `<line x1="%.1f" y1="%.1f" x2="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", left, y(yv), left+w, y(yv))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="end">%s</text>`+"\n", left-4, y(yv)+4, number(yv))
			fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">%s</text>`+"\n", x(xv), top+h+14, number(xv))
		}
		fmt.Fprintf(&b, `<text x="%.1f" y="%.1f" text-anchor="middle">workspaces</text>`+"\n", left+w/2, top+h+30)
		fmt.Fprintf(&b, `<rect x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="none" stroke="#888"/>`+"\n", left, top, w, h)
		for i, t := range tables {
			var points []string
			for _, r := range t.rows {
				if !math.IsNaN(r[col]) {
					points = append(points, fmt.Sprintf("%.1f,%.1f", x(r[0]), y(r[col])))
				}
			}
			fmt.Fprintf(&b, `<polyline points="%s" fill="none" stroke="%s" stroke-width="2"/>`+"\n", strings.Join(points, " "), colors[i])
			for _, r := range t.rows {
				if !math.IsNaN(r[col]) {
					fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", x(r[0]), y(r[col]), colors[i])
				}
			}
		}
	}
	b.WriteString("</svg>\n")
	return b.Bytes()
}

// niceCeiling rounds v up to 1, 2 or 5 times a power of ten (1 for 0).
func niceCeiling(v float64) float64 {
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

// tick is the i-th of the four quarters of max.
func tick(max float64, i int) float64 {
	return max * float64(i) / 4
}

// number formats an axis value rounded to four significant digits, without
// an exponent.
func number(v float64) string {
	rounded, _ := strconv.ParseFloat(strconv.FormatFloat(v, 'g', 4, 64), 64)
	return strconv.FormatFloat(rounded, 'f', -1, 64)
}

// escape makes text safe in SVG.
func escape(s string) string {
	return strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;").Replace(s)
}
