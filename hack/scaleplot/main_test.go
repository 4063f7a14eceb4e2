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

package main

import (
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	for _, tc := range []struct {
		name, in, wantErr string
	}{
		{"figures", "# a comment\nworkspaces\tengage s\n100\t8.5\n300\t20\n", ""},
		{"no header", "100\t8.5\n", "the header must start with workspaces"},
		{"short row", "workspaces\tengage s\n100\n", "1 fields, the header has 2"},
		{"not a number", "workspaces\tengage s\n100\tfast\n", `"fast" is not a figure`},
		{"negative", "workspaces\tengage s\n100\t-1\n", `"-1" is not a figure`},
		{"NaN", "workspaces\tengage s\n100\tNaN\n", `"NaN" is not a figure`},
		{"a figure not reached", "workspaces\tengage s\tconverge s\n100\t8.5\t80\n1000\t444\t-\n", ""},
		{"workspaces not given", "workspaces\tengage s\n-\t8.5\n", `"-" is not a figure`},
		{"nothing", "workspaces\tengage s\n", "no figures"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := parse([]byte(tc.in))
			if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
				t.Errorf("error %v, want %q", err, tc.wantErr)
			}
		})
	}
}

func TestRenderDrawsAPanelPerFigure(t *testing.T) {
	tab, err := parse([]byte("workspaces\tengage s\tconverge s\tRSS <MiB>\n100\t8.5\t130\t300\n300\t20\t400\t700\n"))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(render([]*table{tab}))
	if n := strings.Count(svg, "<polyline"); n != 3 {
		t.Errorf("%d lines, want 3", n)
	}
	if n := strings.Count(svg, "<circle"); n != 6 {
		t.Errorf("%d points, want 6", n)
	}
	for _, want := range []string{">engage s<", ">converge s<", ">RSS &lt;MiB&gt;<", `height="238"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the image lacks %q", want)
		}
	}
}

func TestRenderDrawsEachSeries(t *testing.T) {
	before, err := parse([]byte("# series: before\nworkspaces\tconverge s\n100\t80\n400\t776\n"))
	if err != nil {
		t.Fatal(err)
	}
	after, err := parse([]byte("# series: after <fix>\nworkspaces\tconverge s\n100\t40\n400\t200\n1000\t900\n"))
	if err != nil {
		t.Fatal(err)
	}
	if before.series != "before" || after.series != "after <fix>" {
		t.Fatalf("series %q and %q, want before and after <fix>", before.series, after.series)
	}
	svg := string(render([]*table{before, after}))
	if n := strings.Count(svg, "<polyline"); n != 2 {
		t.Errorf("%d lines, want 2", n)
	}
	for color, points := range map[string]int{colors[0]: 2, colors[1]: 3} {
		if n := strings.Count(svg, `r="3" fill="`+color+`"`); n != points {
			t.Errorf("%d points of %s, want %d", n, color, points)
		}
	}
	// The x axis reaches 1,000 for both series: 400 of the first is drawn
	// at 40 % of the width, not at its end.
	for _, want := range []string{">before<", ">after &lt;fix&gt;<", ">1000<", `height="256"`} {
		if !strings.Contains(svg, want) {
			t.Errorf("the image lacks %q", want)
		}
	}
}

func TestMissingFiguresAreNotDrawn(t *testing.T) {
	tab, err := parse([]byte("workspaces\tengage s\tconverge s\n100\t8.5\t80\n400\t134\t570\n1000\t444\t-\n"))
	if err != nil {
		t.Fatal(err)
	}
	svg := string(render([]*table{tab}))
	if n := strings.Count(svg, "<circle"); n != 5 {
		t.Errorf("%d points, want 5: the missing one is not drawn", n)
	}
	if strings.Contains(svg, "NaN") {
		t.Error("the image has NaN in it")
	}
}

func TestRowsAreSortedByWorkspaces(t *testing.T) {
	tab, err := parse([]byte("workspaces\ts\n300\t3\n100\t1\n200\t2\n"))
	if err != nil {
		t.Fatal(err)
	}
	for i, want := range []float64{100, 200, 300} {
		if tab.rows[i][0] != want {
			t.Errorf("row %d has %v workspaces, want %v", i, tab.rows[i][0], want)
		}
	}
}

func TestNumber(t *testing.T) {
	for v, want := range map[float64]string{0: "0", 0.15000000000000002: "0.15", 250: "250", 1500: "1500", 12.5: "12.5", 20000: "20000"} {
		if got := number(v); got != want {
			t.Errorf("number(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestNiceCeiling(t *testing.T) {
	for v, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 1.2: 2, 3: 5, 7: 10, 130: 200, 1000: 1000} {
		if got := niceCeiling(v); got != want {
			t.Errorf("niceCeiling(%v) = %v, want %v", v, got, want)
		}
	}
}
