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

package analysis

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

func TestRender(t *testing.T) {
	c := Context{Space: "root:org:wds1", Policy: "web", Stage: "prod", Revision: "v2", Clusters: []string{"prod1", "prod2"}}
	for _, tc := range []struct{ query, want string }{
		{`sum(rate(http_errors{cluster=~"{{clusters}}",stage="{{stage}}"}[5m]))`, `sum(rate(http_errors{cluster=~"prod1|prod2",stage="prod"}[5m]))`},
		{`up{space="{{space}}",policy="{{policy}}",version="{{revision}}"}`, `up{space="root:org:wds1",policy="web",version="v2"}`},
		{`vector(1) {{unknown}}`, `vector(1) {{unknown}}`},
	} {
		if got := Render(tc.query, c); got != tc.want {
			t.Errorf("Render(%q) = %q, want %q", tc.query, got, tc.want)
		}
	}
	// A value cannot end the string literal it is put in, and a cluster
	// name's regular expression characters match only themselves.
	hostile := Context{Stage: `x"} or vector(1) #`, Clusters: []string{"a.b", `c"`}}
	if got, want := Render(`m{stage="{{stage}}",cluster=~"{{clusters}}"}`, hostile),
		`m{stage="x\x22} or vector(1) #",cluster=~"a\\.b|c\x22"}`; got != want {
		t.Errorf("hostile values rendered %s, want %s", got, want)
	}
	if got, want := Render(`m{cluster=~"{{clusters}}"}`, Context{}), `m{cluster=~"[^\\s\\S]"}`; got != want {
		t.Errorf("no clusters rendered %s, want %s (a regular expression that matches nothing)", got, want)
	}
}

// hostileRunes are the characters that could end a PromQL string literal,
// escape out of one, or break its line, with a few harmless ones.
var hostileRunes = []rune{'"', '\'', '\\', '\n', '\r', '`', '}', '{', '#', ' ', 'a', 'Z', '0', '.', '|', 'é', '\t', 'x', 'u'}

// randomValue is a value of up to 12 hostile runes.
func randomValue(r *rand.Rand) string {
	var b strings.Builder
	for range r.IntN(13) {
		b.WriteRune(hostileRunes[r.IntN(len(hostileRunes))])
	}
	return b.String()
}

// TestRenderKeepsValuesInsideTheirLiteral checks the placeholders'
// invariant over random hostile values (quotes, backslashes, newlines,
// carriage returns), in double and single quotes: Prometheus's lexer reads
// the literal a value is put in to its end and no further, and its value
// is the value put in (the cluster names', the regular expression that
// matches them). The reader, promLiteral, follows Prometheus's lexer
// (promql/parser/lex.go): in a literal, only the opening quote is an
// escape, besides \a \b \f \n \r \t \v \\ and the numeric ones, and an
// unescaped newline is an error.
func TestRenderKeepsValuesInsideTheirLiteral(t *testing.T) {
	r := rand.New(rand.NewPCG(54, 4))
	for i := range 2000 {
		v := randomValue(r)
		if i < len(hostileRunes) {
			v = string(hostileRunes[i]) // each on its own first
		}
		for _, quote := range []string{`"`, `'`} {
			for _, placeholder := range []string{"{{space}}", "{{policy}}", "{{stage}}", "{{revision}}"} {
				c := Context{Space: v, Policy: v, Stage: v, Revision: v}
				rendered := Render("m{l="+quote+placeholder+quote+"} or vector(1)", c)
				got, rest, err := promLiteral(strings.TrimPrefix(rendered, "m{l="))
				if err != nil || got != v || rest != "} or vector(1)" {
					t.Fatalf("%s = %q in %s-quotes rendered %s: read %q, then %q, %v; want the value, then the rest of the query",
						placeholder, v, quote, rendered, got, rest, err)
				}
			}
			rendered := Render("m{cluster=~"+quote+"{{clusters}}"+quote+"}", Context{Clusters: []string{v}})
			got, rest, err := promLiteral(strings.TrimPrefix(rendered, "m{cluster=~"))
			if err != nil || got != regexp.QuoteMeta(v) || rest != "}" {
				t.Fatalf("cluster %q in %s-quotes rendered %s: read %q, then %q, %v", v, quote, rendered, got, rest, err)
			}
		}
	}
}

// promLiteral reads the PromQL string literal at the start of s as
// Prometheus's lexer and strconv.Unquote do, and returns its value and
// what follows it.
func promLiteral(s string) (value, rest string, err error) {
	if s == "" || (s[0] != '"' && s[0] != '\'') {
		return "", s, errors.New("no string literal")
	}
	quote := s[0]
	var b strings.Builder
	for i := 1; i < len(s); {
		c := s[i]
		switch {
		case c == quote:
			return b.String(), s[i+1:], nil
		case c == '\n':
			return "", "", errors.New("unterminated quoted string")
		case c != '\\':
			r, n := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += n
			continue
		}
		if i+1 >= len(s) {
			return "", "", errors.New("escape sequence not terminated")
		}
		switch e := s[i+1]; e {
		case 'a', 'b', 'f', 'n', 'r', 't', 'v', '\\', quote:
			u, err := strconv.Unquote(`"\` + string(e) + `"`)
			if e == '\'' {
				u, err = "'", nil
			}
			if err != nil {
				return "", "", err
			}
			b.WriteString(u)
			i += 2
		case 'x':
			if i+4 > len(s) {
				return "", "", errors.New("escape sequence not terminated")
			}
			n, err := strconv.ParseUint(s[i+2:i+4], 16, 8)
			if err != nil {
				return "", "", fmt.Errorf("illegal hex escape %q", s[i:i+4])
			}
			b.WriteByte(byte(n))
			i += 4
		default:
			return "", "", fmt.Errorf("unknown escape sequence \\%c", e)
		}
	}
	return "", "", errors.New("unterminated quoted string")
}

func TestClusterNames(t *testing.T) {
	b := &ksv1alpha1.Binding{Spec: ksv1alpha1.BindingSpec{Destinations: []ksv1alpha1.Destination{
		{ClusterId: "prod1"}, {ClusterId: `x"|.*`}, {ClusterId: "edge.east"}, {ClusterId: "UPPER"},
	}}}
	if got := ClusterNames(b); fmt.Sprint(got) != "[prod1 edge.east]" {
		t.Errorf("ClusterNames = %v, want the DNS subdomains only", got)
	}
	if got := ClusterNames(nil); got != nil {
		t.Errorf("ClusterNames(nil) = %v", got)
	}
}
