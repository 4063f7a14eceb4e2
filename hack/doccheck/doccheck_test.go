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

package doccheck

import (
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"unicode"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/internal/expression"
)

// root is the repository, from this package's directory.
const root = "../.."

// pages returns the Markdown files whose links and test names are checked,
// relative to root and slash-separated.
func pages(t *testing.T) []string {
	t.Helper()
	out := []string{"README.md"}
	for _, dir := range []string{"docs", "config"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			if !d.IsDir() && strings.HasSuffix(p, ".md") {
				rel, err := filepath.Rel(root, p)
				if err != nil {
					return err
				}
				out = append(out, filepath.ToSlash(rel))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func read(t *testing.T, page string) string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(page)))
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}

var (
	fence      = regexp.MustCompile("(?m)^ {0,3}(```|~~~)")
	codeSpan   = regexp.MustCompile("`+[^`]*`+")
	inlineLink = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	refLink    = regexp.MustCompile(`(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s|$)`)
	htmlLink   = regexp.MustCompile(`(?i)<(?:a|img)\s[^>]*(?:href|src)="([^"]+)"`)
	heading    = regexp.MustCompile(`^ {0,3}#{1,6}\s+(.*?)\s*#*\s*$`)
	testName   = regexp.MustCompile(`\b(?:Test|Fuzz|Benchmark|Example)[A-Z][A-Za-z0-9_]*`)
	testFunc   = regexp.MustCompile(`(?m)^func ((?:Test|Fuzz|Benchmark|Example)[A-Z][A-Za-z0-9_]*)\(`)
)

// prose returns the page's lines outside fenced code blocks, with code spans
// blanked, so that a link shown as code is not taken for one.
func prose(page string) []string {
	var out []string
	inFence := false
	for _, line := range strings.Split(page, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		out = append(out, codeSpan.ReplaceAllString(line, "``"))
	}
	return out
}

// Anchors returns the anchors GitHub gives the page's headings: lower case,
// punctuation but '-' and '_' dropped, spaces made '-', and a repeated one
// numbered from 1.
func anchors(page string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(page, "\n") {
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		m := heading.FindStringSubmatch(line)
		if inFence || m == nil {
			continue
		}
		out[slug(m[1], seen)] = true
	}
	return out
}

var linkText = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)

func slug(title string, seen map[string]int) string {
	title = linkText.ReplaceAllString(title, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(title) {
		switch {
		case unicode.IsLetter(r), unicode.IsDigit(r), r == '-', r == '_':
			b.WriteRune(r)
		case r == ' ':
			b.WriteRune('-')
		}
	}
	s := b.String()
	n := seen[s]
	seen[s] = n + 1
	if n > 0 {
		s += "-" + strconv.Itoa(n)
	}
	return s
}

// links returns the page's link targets.
func links(page string) []string {
	var out []string
	for _, line := range prose(page) {
		for _, re := range []*regexp.Regexp{inlineLink, refLink, htmlLink} {
			for _, m := range re.FindAllStringSubmatch(line, -1) {
				out = append(out, m[1])
			}
		}
	}
	return out
}

// TestRelativeLinksResolve fails on a relative link of README.md, docs/ or
// config/ to a file that does not exist, or to a heading its page does not
// have.
func TestRelativeLinksResolve(t *testing.T) {
	headings := map[string]map[string]bool{}
	headingsOf := func(page string) map[string]bool {
		if _, ok := headings[page]; !ok {
			headings[page] = anchors(read(t, page))
		}
		return headings[page]
	}
	checked := 0
	for _, page := range pages(t) {
		for _, target := range links(read(t, page)) {
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			checked++
			file, anchor, _ := strings.Cut(target, "#")
			resolved := page
			if file != "" {
				resolved = path.Clean(path.Join(path.Dir(page), file))
				if strings.HasPrefix(resolved, "../") {
					t.Errorf("%s: %s leaves the repository", page, target)
					continue
				}
				if _, err := os.Stat(filepath.Join(root, filepath.FromSlash(resolved))); err != nil {
					t.Errorf("%s: %s: no such file %s", page, target, resolved)
					continue
				}
			}
			if anchor != "" && strings.HasSuffix(resolved, ".md") && !headingsOf(resolved)[anchor] {
				t.Errorf("%s: %s: %s has no heading #%s", page, target, resolved, anchor)
			}
		}
	}
	if checked == 0 {
		t.Fatal("no relative link found: the link pattern is broken")
	}
}

// TestNamedTestsExist fails when a page of README.md, docs/ or config/
// names a test, fuzz test, benchmark or example that no _test.go file of the
// repository declares: a claim that a named test proves something must name
// a test that runs. A name that begins a declared one passes, as a -run or
// -bench pattern does (-bench BenchmarkCompile runs BenchmarkCompileCached).
func TestNamedTestsExist(t *testing.T) {
	declared := map[string]bool{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "bin") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(p, "_test.go") {
			return nil
		}
		raw, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		for _, m := range testFunc.FindAllStringSubmatch(string(raw), -1) {
			declared[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !declared["TestNamedTestsExist"] {
		t.Fatal("this test is not among the declared tests: the declaration pattern is broken")
	}
	named := 0
	for _, page := range pages(t) {
		missing := map[string]bool{}
		for _, name := range testName.FindAllString(read(t, page), -1) {
			named++
			if !declared[name] && !begins(declared, name) {
				missing[name] = true
			}
		}
		var names []string
		for name := range missing {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			t.Errorf("%s names %s, which no test file declares", page, name)
		}
	}
	if named == 0 {
		t.Fatal("no test named in any page: the name pattern is broken")
	}
}

// begins says whether a declared name begins with prefix.
func begins(declared map[string]bool, prefix string) bool {
	for name := range declared {
		if strings.HasPrefix(name, prefix) {
			return true
		}
	}
	return false
}

// kubectlGet is a console line that lists one of the stager's kinds.
var kubectlGet = regexp.MustCompile(`^\$ kubectl get (sbpa|sbp)\b(.*)$`)

// TestPrinterColumnsMatchTheCRDs fails when a page shows `kubectl get sbp`
// or `kubectl get sbpa` with other columns than the generated CRD prints:
// NAME, then the additionalPrinterColumns of priority 0, and with -o wide
// all of them, in the CRD's order.
func TestPrinterColumnsMatchTheCRDs(t *testing.T) {
	crds := map[string]string{
		"sbp":  "config/crd/bases/community.kubestellar.io_stagedbindingpolicies.yaml",
		"sbpa": "config/crd/bases/community.kubestellar.io_stageapprovals.yaml",
	}
	columns := map[string][]apiextensionsv1.CustomResourceColumnDefinition{}
	for short, file := range crds {
		var crd apiextensionsv1.CustomResourceDefinition
		if err := yaml.Unmarshal([]byte(read(t, file)), &crd); err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if !slices.Contains(crd.Spec.Names.ShortNames, short) || len(crd.Spec.Versions) != 1 {
			t.Fatalf("%s: short names %v, %d versions; want %s and one", file, crd.Spec.Names.ShortNames, len(crd.Spec.Versions), short)
		}
		columns[short] = crd.Spec.Versions[0].AdditionalPrinterColumns
	}
	shown := 0
	for _, page := range pages(t) {
		lines := strings.Split(read(t, page), "\n")
		for i, line := range lines {
			m := kubectlGet.FindStringSubmatch(line)
			if m == nil || i+1 == len(lines) || strings.Contains(m[2], "-o ") && !strings.Contains(m[2], "-o wide") {
				continue
			}
			want := []string{"NAME"}
			for _, c := range columns[m[1]] {
				if c.Priority == 0 || strings.Contains(m[2], "-o wide") {
					want = append(want, strings.ToUpper(c.Name))
				}
			}
			shown++
			if got := headerColumns(lines[i+1]); !slices.Equal(got, want) {
				t.Errorf("%s:%d: %s shows the columns\n\t%q\nthe CRD prints\n\t%q", page, i+2, strings.TrimPrefix(line, "$ "), got, want)
			}
		}
	}
	if shown == 0 {
		t.Fatal("no page shows kubectl get sbp: the pattern is broken")
	}
}

// headerColumns splits a table's header as kubectl prints it: columns apart
// by at least two spaces.
func headerColumns(header string) []string {
	var out []string
	for _, f := range regexp.MustCompile(`\s{2,}`).Split(strings.TrimSpace(header), -1) {
		if f != "" {
			out = append(out, f)
		}
	}
	return out
}

// stagerGet is a console line of `kubectl stager get`.
var stagerGet = regexp.MustCompile(`^\$ kubectl stager get\b(.*)$`)

// TestPluginColumnsMatchItsGoldenFiles fails when a page shows `kubectl
// stager get` with other columns than the plugin prints: test/plugin checks
// its output against get.golden and get-wide.golden, and --all-spaces adds
// SPACE in front.
func TestPluginColumnsMatchItsGoldenFiles(t *testing.T) {
	golden := func(name string) []string {
		first, _, _ := strings.Cut(read(t, "test/plugin/testdata/"+name), "\n")
		return headerColumns(first)
	}
	plain, wide := golden("get.golden"), golden("get-wide.golden")
	shown := 0
	for _, page := range pages(t) {
		lines := strings.Split(read(t, page), "\n")
		for i, line := range lines {
			m := stagerGet.FindStringSubmatch(line)
			if m == nil || i+1 == len(lines) || strings.Contains(m[1], "--watch") {
				continue
			}
			args, _, _ := strings.Cut(m[1], "#")
			want := plain
			if strings.Contains(args, "-o wide") {
				want = wide
			}
			if strings.Contains(args, "--all-spaces") || strings.Contains(args, "-A") {
				want = append([]string{"SPACE"}, want...)
			}
			shown++
			if got := headerColumns(lines[i+1]); !slices.Equal(got, want) {
				t.Errorf("%s:%d: %s shows the columns\n\t%q\nthe plugin prints\n\t%q", page, i+2, strings.TrimPrefix(line, "$ "), got, want)
			}
		}
	}
	if shown == 0 {
		t.Fatal("no page shows kubectl stager get: the pattern is broken")
	}
}

// TestTestLayersMatchTheMakefile fails when docs/testing.md's table of
// test layers names other packages for a make target than the Makefile's
// variable of that layer runs.
func TestTestLayersMatchTheMakefile(t *testing.T) {
	makefile := read(t, "Makefile")
	layers := map[string]string{
		"make test-unit":        "UNIT_PKGS",
		"make test-integration": "INTEGRATION_PKGS",
		"make test-e2e":         "E2E_PKGS",
		"make test-kcp":         "KCP_PKGS",
		"make test-browser":     "BROWSER_PKGS",
	}
	found := 0
	for _, line := range strings.Split(read(t, "docs/testing.md"), "\n") {
		cells := strings.Split(strings.Trim(line, "|"), "|")
		if len(cells) < 3 {
			continue
		}
		variable, ok := layers[strings.Trim(strings.TrimSpace(cells[0]), "`")]
		if !ok {
			continue
		}
		found++
		m := regexp.MustCompile(`(?m)^` + variable + ` \?= (.*)$`).FindStringSubmatch(makefile)
		if m == nil {
			t.Errorf("the Makefile sets no %s", variable)
			continue
		}
		want, got := packageSet(m[1]), packageSet(strings.Trim(strings.TrimSpace(cells[2]), "`"))
		if !slices.Equal(got, want) {
			t.Errorf("docs/testing.md: %s runs %q; the Makefile's %s is %q", cells[0], got, variable, want)
		}
	}
	if found != len(layers) {
		t.Errorf("docs/testing.md's table has %d of the %d layers", found, len(layers))
	}
}

// packageSet normalizes a list of packages: no "./", no "/..." or "/",
// sorted.
func packageSet(list string) []string {
	var out []string
	for _, p := range strings.Fields(list) {
		p = strings.TrimSuffix(strings.TrimSuffix(strings.TrimPrefix(p, "./"), "..."), "/")
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

var (
	expressionKey = regexp.MustCompile(`^(\s*(?:- )?)(condition|filter|failureCondition|successCondition):\s*(.*)$`)
	evalFlag      = regexp.MustCompile(`--(condition|filter) "([^"]+)"`)
	yamlComment   = regexp.MustCompile(`\s{2,}#.*$`)
	// An analysis's failureCondition reads the variable result.
	analysisVariable = regexp.MustCompile(`\bresult\b`)
	// A web analysis has a web key; a list item starts another analysis.
	webKey   = regexp.MustCompile(`^\s*web:`)
	listItem = regexp.MustCompile(`^\s*- `)
)

// shownExpression is a CEL expression a page shows, where it shows it.
type shownExpression struct {
	where string
	kind  expression.Kind
	src   string
}

// expressions returns the filters, conditions and analysis conditions the
// page's code blocks show, with their kinds: YAML keys (one line, or a
// literal block) and kubectl stager eval's flags. "..." stands for an
// expression left out. An analysis's conditions after a web key, in the
// same list item, are a web analysis's.
func expressions(page, text string) []shownExpression {
	var out []shownExpression
	lines := strings.Split(text, "\n")
	inFence, web := false, false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if fence.MatchString(line) {
			inFence, web = !inFence, false
			continue
		}
		if !inFence {
			continue
		}
		switch {
		case webKey.MatchString(line):
			web = true
		case listItem.MatchString(line):
			web = false
		}
		where := page + ":" + strconv.Itoa(i+1)
		for _, m := range evalFlag.FindAllStringSubmatch(line, -1) {
			out = append(out, shownExpression{where, expression.Kind(m[1]), m[2]})
		}
		m := expressionKey.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		src := strings.TrimSpace(yamlComment.ReplaceAllString(m[3], ""))
		if src == "|" {
			var block []string
			for i+1 < len(lines) && len(lines[i+1])-len(strings.TrimLeft(lines[i+1], " ")) > len(m[1]) {
				i++
				block = append(block, strings.TrimSpace(lines[i]))
			}
			src = strings.Join(block, "\n")
		}
		if src == "" || src == "..." {
			continue
		}
		kind := expression.KindCondition
		switch {
		case m[2] == "filter":
			kind = expression.KindFilter
		case (m[2] == "successCondition" || analysisVariable.MatchString(src)) && web:
			kind = expression.KindWebAnalysis
		case m[2] == "successCondition", analysisVariable.MatchString(src):
			kind = expression.KindAnalysis
		}
		out = append(out, shownExpression{where, kind, src})
	}
	return out
}

// TestShownExpressionsCompile fails when a filter, condition or analysis
// condition a page shows does not compile with the stager's engine and its
// default limits: an example a reader copies must work.
func TestShownExpressionsCompile(t *testing.T) {
	engine, err := expression.NewEngine()
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[expression.Kind]int{}
	for _, page := range pages(t) {
		for _, x := range expressions(page, read(t, page)) {
			kinds[x.kind]++
			if _, err := engine.Compile(x.kind, x.src); err != nil {
				t.Errorf("%s: %s %q: %v", x.where, x.kind, x.src, err)
			}
		}
	}
	for _, kind := range []expression.Kind{expression.KindFilter, expression.KindCondition, expression.KindAnalysis, expression.KindWebAnalysis} {
		if kinds[kind] == 0 {
			t.Errorf("no %s found in the pages: the patterns are broken", kind)
		}
	}
	t.Logf("compiled %v", kinds)
}
