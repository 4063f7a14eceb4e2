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

package expression

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apiextv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const seedCondition = `obj.results.exists(r, r.name == 'deployments-aggregator' && r.rows.exists(row, row.columns.exists(col, col.type == 'Number' && col.float == '1')))`

const seedConditionMultiLine = `combinedStatus.results.exists(r,
  r.name == 'deployments-aggregator' &&
  r.rows.exists(row,
    row.columns.exists(col,
      col.type == 'Number' &&
      col.float == '1'
)))`

func ptr[T any](v T) *T { return &v }

func number(s string) ksv1alpha1.Value {
	return ksv1alpha1.Value{Type: ksv1alpha1.TypeNumber, Number: ptr(s)}
}

func str(s string) ksv1alpha1.Value {
	return ksv1alpha1.Value{Type: ksv1alpha1.TypeString, String: ptr(s)}
}

// combinedStatus builds a CombinedStatus with one result of the given name
// whose rows are the given rows of columns.
func combinedStatus(resultName string, rows ...[]ksv1alpha1.Value) *ksv1alpha1.CombinedStatus {
	cs := &ksv1alpha1.CombinedStatus{
		TypeMeta: metav1.TypeMeta{APIVersion: "control.kubestellar.io/v1alpha1", Kind: "CombinedStatus"},
		ObjectMeta: metav1.ObjectMeta{
			Name:      "b1-uid",
			Namespace: "default",
			Labels:    map[string]string{"status.kubestellar.io/name": "nginx"},
		},
	}
	res := ksv1alpha1.NamedStatusCombination{Name: resultName, ColumnNames: []string{"count"}}
	for _, cols := range rows {
		res.Rows = append(res.Rows, ksv1alpha1.StatusCombinationRow{Columns: cols})
	}
	cs.Results = append(cs.Results, res)
	return cs
}

func newEngine(t testing.TB, opts ...Option) *Engine {
	t.Helper()
	e, err := NewEngine(opts...)
	if err != nil {
		t.Fatalf("NewEngine: %v", err)
	}
	return e
}

func TestConditions(t *testing.T) {
	e := newEngine(t)
	readyOne := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	tests := []struct {
		name string
		expr string
		cs   *ksv1alpha1.CombinedStatus
		want bool
	}{
		{"seed/true", seedCondition, readyOne, true},
		{"seed multi-line/true", seedConditionMultiLine, readyOne, true},
		{"seed/count 0", seedCondition, combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("0")}), false},
		{"seed multi-line/count 0", seedConditionMultiLine, combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("0")}), false},
		{"seed/other collector", seedCondition, combinedStatus("other", []ksv1alpha1.Value{number("1")}), false},
		{"seed/string column", seedCondition, combinedStatus("deployments-aggregator", []ksv1alpha1.Value{str("1")}), false},
		{"seed/second row", seedCondition, combinedStatus("deployments-aggregator",
			[]ksv1alpha1.Value{str("x"), number("2")}, []ksv1alpha1.Value{str("y"), number("1")}), true},
		{"seed/no rows", seedCondition, combinedStatus("deployments-aggregator"), false},
		{"seed/no results", seedCondition, &ksv1alpha1.CombinedStatus{}, false},
		{"seed multi-line/no results", seedConditionMultiLine, &ksv1alpha1.CombinedStatus{}, false},
		{"metadata", `obj.metadata.labels["status.kubestellar.io/name"] == "nginx" && obj.kind == "CombinedStatus"`, readyOne, true},
		{"optional", `obj.?metadata.?annotations.?foo.orValue("none") == "none"`, readyOne, true},
		{"numeric conversion", `obj.results[0].rows[0].columns[0].float.contains('.') || double(obj.results[0].rows[0].columns[0].float) >= 1`, readyOne, true},
		{"object column", `obj.results[0].rows[0].columns[0].object.replicas == 3`,
			combinedStatus("r", []ksv1alpha1.Value{{Type: ksv1alpha1.TypeObject, Object: &apiextv1.JSON{Raw: []byte(`{"replicas":3}`)}}}), true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.Compile(KindCondition, tt.expr)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.EvalCondition(tt.cs)
			if err != nil {
				t.Fatalf("EvalCondition: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEvalConditionDoesNotModifyInput(t *testing.T) {
	e := newEngine(t)
	p, err := e.Compile(KindCondition, seedCondition)
	if err != nil {
		t.Fatal(err)
	}
	cs := &ksv1alpha1.CombinedStatus{}
	if _, err := p.EvalCondition(cs); err != nil {
		t.Fatal(err)
	}
	if cs.Results != nil {
		t.Errorf("CombinedStatus was modified: %+v", cs.Results)
	}
}

func TestFilters(t *testing.T) {
	e := newEngine(t)
	namespaced := ClauseFromNamespaceScope(ksv1alpha1.NamespaceScopeDownsyncClause{
		NamespaceScopeDownsyncObject: ksv1alpha1.NamespaceScopeDownsyncObject{
			GroupVersionResource: metav1.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
			Namespace:            "web",
			Name:                 "nginx-frontend",
			ResourceVersion:      "123",
		},
		DownsyncModulation: ksv1alpha1.DownsyncModulation{
			StatusCollectors:          []string{"my-collector", "other"},
			WantMultiWECReportedState: true,
		},
	})
	clusterScoped := ClauseFromClusterScope(ksv1alpha1.ClusterScopeDownsyncClause{
		ClusterScopeDownsyncObject: ksv1alpha1.ClusterScopeDownsyncObject{
			GroupVersionResource: metav1.GroupVersionResource{Version: "v1", Resource: "namespaces"},
			Name:                 "Web",
			ResourceVersion:      "7",
		},
		DownsyncModulation: ksv1alpha1.DownsyncModulation{CreateOnly: true},
	})
	tests := []struct {
		name   string
		expr   string
		clause Clause
		want   bool
	}{
		{"resource/namespaced", `downsyncClause.resource == "deployments"`, namespaced, true},
		{"resource/cluster", `downsyncClause.resource == "deployments"`, clusterScoped, false},
		{"namespace empty/namespaced", `downsyncClause.namespace == ""`, namespaced, false},
		{"namespace empty/cluster", `downsyncClause.namespace == ""`, clusterScoped, true},
		{"collector/namespaced", `"my-collector" in downsyncClause.statusCollectors`, namespaced, true},
		{"collector/cluster", `"my-collector" in downsyncClause.statusCollectors`, clusterScoped, false},
		{"no collectors", `downsyncClause.statusCollectors.size() == 0`, clusterScoped, true},
		{"startsWith/namespaced", `downsyncClause.name.startsWith("nginx")`, namespaced, true},
		{"startsWith/cluster", `downsyncClause.name.startsWith("nginx")`, clusterScoped, false},
		{"strings ext lowerAscii", `downsyncClause.name.lowerAscii() == "web"`, clusterScoped, true},
		{"strings ext split", `downsyncClause.name.split("-")[1] == "frontend"`, namespaced, true},
		{"sets ext", `sets.intersects(downsyncClause.statusCollectors, ["my-collector", "x"])`, namespaced, true},
		{"lists ext", `downsyncClause.statusCollectors.sort() == ["my-collector", "other"]`, namespaced, true},
		{"math ext", `math.greatest(int(downsyncClause.resourceVersion), 100) == 123`, namespaced, true},
		{"bools", `!downsyncClause.createOnly && downsyncClause.wantMultiWECReportedState && !downsyncClause.wantSingletonReportedState`, namespaced, true},
		{"createOnly", `downsyncClause.createOnly`, clusterScoped, true},
		{"gv", `downsyncClause.group == "" && downsyncClause.version == "v1" && downsyncClause.resourceVersion == "7"`, clusterScoped, true},
		{"cross-type numeric", `int(downsyncClause.resourceVersion) > 6.5`, clusterScoped, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := e.Compile(KindFilter, tt.expr)
			if err != nil {
				t.Fatalf("Compile: %v", err)
			}
			got, err := p.EvalFilter(tt.clause)
			if err != nil {
				t.Fatalf("EvalFilter: %v", err)
			}
			if got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestErrors(t *testing.T) {
	cs := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	clause := Clause{GroupVersionResource: metav1.GroupVersionResource{Resource: "deployments"}, Name: "nginx"}
	tests := []struct {
		name       string
		opts       []Option
		kind       Kind
		expr       string
		evalAs     Kind // role to evaluate in; "" means "fail at compile time"
		wantReason ErrorReason
		wantText   string // substring expected in Error()
	}{
		{name: "syntax", kind: KindFilter, expr: `downsyncClause.resource ==`, wantReason: ReasonCompileError},
		{name: "unknown variable", kind: KindFilter, expr: `obj.resource == "x"`, wantReason: ReasonCompileError, wantText: "undeclared reference"},
		{name: "unknown field", kind: KindFilter, expr: `downsyncClause.kind == "x"`, wantReason: ReasonCompileError},
		{name: "empty", kind: KindCondition, expr: "", wantReason: ReasonCompileError, wantText: "empty"},
		{name: "blank", kind: KindFilter, expr: " \n\t", wantReason: ReasonCompileError, wantText: "empty"},
		{name: "unknown kind", kind: Kind("selector"), expr: "true", wantReason: ReasonCompileError, wantText: "unknown expression kind"},
		{name: "non-bool static", kind: KindFilter, expr: `downsyncClause.name`, wantReason: ReasonNotBoolean, wantText: "string"},
		{name: "non-bool static condition", kind: KindCondition, expr: `size(obj)`, wantReason: ReasonNotBoolean},
		{name: "non-bool dyn", kind: KindCondition, expr: `obj.results[0].name`, evalAs: KindCondition, wantReason: ReasonNotBoolean, wantText: "string"},
		{name: "missing key", kind: KindCondition, expr: `obj.foo`, evalAs: KindCondition, wantReason: ReasonEvaluationError, wantText: "no such key"},
		{name: "index out of range", kind: KindCondition, expr: `obj.results[5].name == "x"`, evalAs: KindCondition, wantReason: ReasonEvaluationError},
		{name: "bad conversion", kind: KindFilter, expr: `int(downsyncClause.name) > 0`, evalAs: KindFilter, wantReason: ReasonEvaluationError},
		{name: "cost limit", opts: []Option{WithCostLimit(100)}, kind: KindFilter,
			expr: `lists.range(1000).all(i, i >= 0)`, evalAs: KindFilter, wantReason: ReasonCostLimitExceeded, wantText: "cost limit"},
		{name: "cost limit condition", opts: []Option{WithCostLimit(50)}, kind: KindCondition,
			expr: `lists.range(100).map(i, obj.results).size() == 100`, evalAs: KindCondition, wantReason: ReasonCostLimitExceeded},
		{name: "filter as condition", kind: KindFilter, expr: `downsyncClause.resource == "deployments"`, evalAs: KindCondition, wantReason: ReasonWrongKind},
		{name: "condition as filter", kind: KindCondition, expr: seedCondition, evalAs: KindFilter, wantReason: ReasonWrongKind},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, tt.opts...)
			p, err := e.Compile(tt.kind, tt.expr)
			if tt.evalAs != "" {
				if err != nil {
					t.Fatalf("Compile: unexpected error %v", err)
				}
				switch tt.evalAs {
				case KindFilter:
					_, err = p.EvalFilter(clause)
				case KindCondition:
					_, err = p.EvalCondition(cs)
				}
			} else if p != nil {
				t.Errorf("Compile returned a program along with error %v", err)
			}
			var exprErr *Error
			if !errors.As(err, &exprErr) {
				t.Fatalf("got error %v (%T), want *Error", err, err)
			}
			if exprErr.Reason != tt.wantReason {
				t.Errorf("Reason = %s, want %s (error: %v)", exprErr.Reason, tt.wantReason, err)
			}
			if exprErr.Kind != tt.kind || exprErr.Expression != tt.expr {
				t.Errorf("Kind, Expression = %q, %q; want %q, %q", exprErr.Kind, exprErr.Expression, tt.kind, tt.expr)
			}
			msg := err.Error()
			if !strings.Contains(msg, fmt.Sprintf("%q", tt.expr)) || !strings.HasPrefix(msg, string(tt.kind)+" ") {
				t.Errorf("Error() = %q does not name the kind and the expression", msg)
			}
			if !strings.Contains(msg, tt.wantText) {
				t.Errorf("Error() = %q, want it to contain %q", msg, tt.wantText)
			}
			if exprErr.Unwrap() == nil {
				t.Errorf("Unwrap() = nil")
			}
		})
	}
}

func TestErrorMessage(t *testing.T) {
	e := newEngine(t)
	p, err := e.Compile(KindCondition, "obj.foo")
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.EvalCondition(&ksv1alpha1.CombinedStatus{})
	if want := `condition "obj.foo": evaluation error: no such key: foo`; err == nil || err.Error() != want {
		t.Errorf("Error() = %v, want %s", err, want)
	}
}

func TestMisuse(t *testing.T) {
	var nilProgram *Program
	if _, err := nilProgram.EvalFilter(Clause{}); err == nil {
		t.Error("EvalFilter on nil program: want error")
	}
	if _, err := nilProgram.EvalCondition(&ksv1alpha1.CombinedStatus{}); err == nil {
		t.Error("EvalCondition on nil program: want error")
	}
	if _, err := (&Program{}).EvalFilter(Clause{}); err == nil {
		t.Error("EvalFilter on zero program: want error")
	}
	var nilEngine *Engine
	if _, err := nilEngine.Compile(KindFilter, "true"); err == nil {
		t.Error("Compile on nil engine: want error")
	}
	if _, err := (&Engine{}).Compile(KindFilter, "true"); err == nil {
		t.Error("Compile on zero engine: want error")
	}
	e := newEngine(t)
	p, err := e.Compile(KindCondition, seedCondition)
	if err != nil {
		t.Fatal(err)
	}
	var exprErr *Error
	if _, err := p.EvalCondition(nil); !errors.As(err, &exprErr) || exprErr.Reason != ReasonEvaluationError {
		t.Errorf("EvalCondition(nil) = %v, want EvaluationError", err)
	}
	if _, err := NewEngine(WithCacheSize(0)); err == nil {
		t.Error("WithCacheSize(0): want error")
	}
	if _, err := NewEngine(WithCostLimit(0)); err == nil {
		t.Error("WithCostLimit(0): want error")
	}
}

func TestCache(t *testing.T) {
	t.Run("same source compiles once", func(t *testing.T) {
		e := newEngine(t)
		p1, err1 := e.Compile(KindCondition, seedCondition)
		p2, err2 := e.Compile(KindCondition, seedCondition)
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if p1 != p2 {
			t.Error("second Compile returned a different program")
		}
		if n := e.Compilations(); n != 1 {
			t.Errorf("Compilations() = %d, want 1", n)
		}
		if p1.Source() != seedCondition || p1.Kind() != KindCondition {
			t.Errorf("Source(), Kind() = %q, %q", p1.Source(), p1.Kind())
		}
	})
	t.Run("concurrent compiles of one source share one compilation", func(t *testing.T) {
		e := newEngine(t)
		programs := make([]*Program, 16)
		var wg sync.WaitGroup
		for i := range programs {
			wg.Go(func() {
				p, err := e.Compile(KindCondition, seedCondition)
				if err != nil {
					t.Error(err)
				}
				programs[i] = p
			})
		}
		wg.Wait()
		if n := e.Compilations(); n != 1 {
			t.Errorf("Compilations() = %d, want 1", n)
		}
		for _, p := range programs {
			if p != programs[0] {
				t.Fatal("concurrent Compile calls returned different programs")
			}
		}
	})
	t.Run("compile errors are cached", func(t *testing.T) {
		e := newEngine(t)
		_, err1 := e.Compile(KindFilter, "(")
		_, err2 := e.Compile(KindFilter, "(")
		if err1 == nil || err2 == nil {
			t.Fatal("want errors")
		}
		if n := e.Compilations(); n != 1 {
			t.Errorf("Compilations() = %d, want 1", n)
		}
	})
	t.Run("kinds are cached separately", func(t *testing.T) {
		e := newEngine(t)
		const src = "true"
		pf, err := e.Compile(KindFilter, src)
		if err != nil {
			t.Fatal(err)
		}
		pc, err := e.Compile(KindCondition, src)
		if err != nil {
			t.Fatal(err)
		}
		if pf == pc || pf.Kind() != KindFilter || pc.Kind() != KindCondition {
			t.Errorf("filter and condition programs not distinct: %v %v", pf.Kind(), pc.Kind())
		}
		if n := e.Compilations(); n != 2 {
			t.Errorf("Compilations() = %d, want 2", n)
		}
		if _, err := pf.EvalFilter(Clause{}); err != nil {
			t.Error(err)
		}
		if _, err := pc.EvalCondition(&ksv1alpha1.CombinedStatus{}); err != nil {
			t.Error(err)
		}
	})
	t.Run("LRU eviction", func(t *testing.T) {
		e := newEngine(t, WithCacheSize(2))
		compile := func(src string) {
			t.Helper()
			if _, err := e.Compile(KindFilter, src); err != nil {
				t.Fatal(err)
			}
		}
		compile("true")  // 1: [true]
		compile("false") // 2: [false true]
		compile("true")  // hit: [true false]
		compile("1 < 2") // 3: evicts false: [1<2 true]
		if n := e.Compilations(); n != 3 {
			t.Fatalf("Compilations() = %d, want 3", n)
		}
		compile("true") // hit
		if n := e.Compilations(); n != 3 {
			t.Errorf("recently used entry was evicted: Compilations() = %d, want 3", n)
		}
		compile("false") // evicted earlier: recompiled, evicts 1<2
		if n := e.Compilations(); n != 4 {
			t.Errorf("least recently used entry was not evicted: Compilations() = %d, want 4", n)
		}
		compile("true") // still cached
		if n := e.Compilations(); n != 4 {
			t.Errorf("Compilations() = %d, want 4", n)
		}
	})
}

func TestConcurrentUse(t *testing.T) {
	e := newEngine(t, WithCacheSize(4))
	ready := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("1")})
	notReady := combinedStatus("deployments-aggregator", []ksv1alpha1.Value{number("0")})
	clause := Clause{GroupVersionResource: metav1.GroupVersionResource{Resource: "deployments"}, Name: "nginx-1"}
	const goroutines = 16
	const iterations = 50
	var wg sync.WaitGroup
	errs := make(chan error, goroutines)
	for g := range goroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range iterations {
				cond := seedCondition
				if (g+i)%2 == 0 {
					cond = seedConditionMultiLine
				}
				p, err := e.Compile(KindCondition, cond)
				if err != nil {
					errs <- err
					return
				}
				cs, want := ready, true
				if i%3 == 0 {
					cs, want = notReady, false
				}
				if got, err := p.EvalCondition(cs); err != nil || got != want {
					errs <- fmt.Errorf("EvalCondition = %v, %w; want %v", got, err, want)
					return
				}
				// Also churn the LRU with distinct filters.
				f, err := e.Compile(KindFilter, fmt.Sprintf(`downsyncClause.name != "n%d"`, (g*iterations+i)%7))
				if err != nil {
					errs <- err
					return
				}
				if got, err := f.EvalFilter(clause); err != nil || !got {
					errs <- fmt.Errorf("EvalFilter = %v, %w; want true", got, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}
