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

package app

import (
	"testing"

	"github.com/spf13/pflag"

	"github.com/kubestellar/workload-stager/providers"
)

// TestSpaceFlagsAreTheStagersButTheGuards: --all-spaces reads the
// registrations by the stager's own provider flags, with the same help,
// except those that loosen the kubeconfig guard (a Secret's exec plugin
// would run on the user's machine) or only tune the stager's run.
func TestSpaceFlagsAreTheStagersButTheGuards(t *testing.T) {
	plugin := pflag.NewFlagSet("plugin", pflag.ContinueOnError)
	addSpaceFlags(plugin)
	stager := pflag.NewFlagSet("stager", pflag.ContinueOnError)
	providers.NewOptions().AddFlags(stager)

	left := map[string]bool{"insecure-kubeconfig-exec": true, "insecure-kubeconfig-tls": true, "kubeflex-resync": true}
	stager.VisitAll(func(f *pflag.Flag) {
		got := plugin.Lookup(f.Name)
		switch {
		case left[f.Name] && got != nil:
			t.Errorf("the plugin has --%s", f.Name)
		case !left[f.Name] && got == nil:
			t.Errorf("the plugin lacks the stager's --%s", f.Name)
		case got != nil && (got.Usage != f.Usage || got.DefValue != f.DefValue):
			t.Errorf("--%s: the plugin's help or default differs from the stager's", f.Name)
		}
	})
	if err := plugin.Parse([]string{"--insecure-kubeconfig-exec"}); err == nil {
		t.Error("the plugin accepted --insecure-kubeconfig-exec")
	}
}
