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
	"regexp"
	"strings"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Context is what an analysis's query may refer to.
type Context struct {
	// Space, Policy, Stage and Revision replace {{space}}, {{policy}},
	// {{stage}} and {{revision}}.
	Space, Policy, Stage, Revision string
	// Clusters replace {{clusters}}, as a regular expression that matches
	// exactly them.
	Clusters []string
}

// ClusterNames returns the names of a Binding's destinations that are DNS
// subdomains, as cluster names are, for Context.Clusters; nil for no
// Binding.
func ClusterNames(binding *ksv1alpha1.Binding) []string {
	if binding == nil {
		return nil
	}
	var names []string
	for _, d := range binding.Spec.Destinations {
		if len(validation.IsDNS1123Subdomain(d.ClusterId)) == 0 {
			names = append(names, d.ClusterId)
		}
	}
	return names
}

// matchesNothing is a regular expression that matches no label value, not
// even the empty one (which a series without the label has).
const matchesNothing = `[^\s\S]`

// Render replaces the placeholders of query with the values of c, each
// escaped for a PromQL string literal, so that a value cannot end the
// literal it is put in. Text that is not a placeholder is left alone.
func Render(query string, c Context) string {
	clusters := matchesNothing
	if len(c.Clusters) > 0 {
		quoted := make([]string, len(c.Clusters))
		for i, name := range c.Clusters {
			quoted[i] = regexp.QuoteMeta(name)
		}
		clusters = strings.Join(quoted, "|")
	}
	return strings.NewReplacer(
		"{{space}}", escape(c.Space),
		"{{policy}}", escape(c.Policy),
		"{{stage}}", escape(c.Stage),
		"{{revision}}", escape(c.Revision),
		"{{clusters}}", escape(clusters),
	).Replace(query)
}

// escape escapes s for the inside of a PromQL string literal in double or
// single quotes (a raw string in back quotes has no escapes: a query
// should not put a placeholder in one). Quotes are hex escapes: PromQL,
// as Go, takes \" only in double quotes and \' only in single ones, and
// escape does not know which the placeholder is in.
func escape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\x22`, `'`, `\x27`, "\n", `\n`, "\r", `\r`).Replace(s)
}
