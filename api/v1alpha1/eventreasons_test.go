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

package v1alpha1

import (
	"go/ast"
	"go/constant"
	"go/importer"
	"go/parser"
	"go/token"
	"go/types"
	"os"
	"strings"
	"testing"
)

// TestEventReasonsAreTheConstants checks that every Reason* and
// EventReason* string constant of the package is an event reason, and
// nothing else is: a reason added later and left out of the list would
// have its Events dropped as forged.
func TestEventReasonsAreTheConstants(t *testing.T) {
	fset := token.NewFileSet()
	entries, err := os.ReadDir(".")
	if err != nil {
		t.Fatal(err)
	}
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, e.Name(), nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	conf := types.Config{Importer: importer.ForCompiler(fset, "source", nil), Error: func(error) {}}
	pkg, _ := conf.Check("v1alpha1", fset, files, nil)
	want := map[string]bool{}
	scope := pkg.Scope()
	for _, name := range scope.Names() {
		c, ok := scope.Lookup(name).(*types.Const)
		if !ok || !strings.HasPrefix(name, "Reason") && !strings.HasPrefix(name, "EventReason") || c.Val().Kind() != constant.String {
			continue
		}
		want[constant.StringVal(c.Val())] = true
		if !IsEventReason(constant.StringVal(c.Val())) {
			t.Errorf("%s (%s) is not an event reason", name, c.Val())
		}
	}
	if len(want) < 40 {
		t.Fatalf("found %d reason constants: the check reads the package wrongly", len(want))
	}
	for r := range eventReasons {
		if !want[r] {
			t.Errorf("%q is an event reason but no constant's value", r)
		}
	}
}
