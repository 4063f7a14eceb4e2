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

package kubeflex

import (
	"strings"
	"testing"

	findkubeconfig "github.com/kubestellar/workload-stager/providers/kubeconfig"
	findkubeflex "github.com/kubestellar/workload-stager/providers/kubeflex"
)

// TestUnusableNotesDiscloseNothing: a ControlPlane is cluster-scoped, so
// its Events go to the namespace "default", which more people read than
// the Secrets a ControlPlane names and the stager's log. A note says why
// in words of the reason alone: it names no Secret or namespace, does not
// tell a missing Secret from one without the key, and names no server,
// file or command of a refused kubeconfig.
func TestUnusableNotesDiscloseNothing(t *testing.T) {
	secrets := []string{"kubeflex-system", "wds1-kubeconfig", "https://10.0.0.7:6443", "/var/run/secrets", "hunter2", "/bin/sh"}
	refused := &findkubeconfig.RefusedError{Violations: []findkubeconfig.Violation{
		{Reason: findkubeconfig.ReasonExec, Field: `users["admin"].exec`, Why: `the credential plugin "/bin/sh" would run`},
		{Reason: findkubeconfig.ReasonFileReference, Field: `users["admin"].tokenFile`, Why: `reads the file "/var/run/secrets/token"`},
		{Reason: findkubeconfig.ReasonInsecureServer, Field: `clusters["wds1"].server`, Why: `"http://admin:hunter2@10.0.0.7" is plain http`},
	}}
	notes := map[string]string{
		findkubeflex.ReasonSecretUnreadable: unusableNote(findkubeflex.ReasonSecretUnreadable),
		findkubeflex.ReasonNoKubeconfig:     unusableNote(findkubeflex.ReasonNoKubeconfig),
		"refused":                           unusableNote(refused.Reason()),
	}
	for name, note := range notes {
		for _, secret := range secrets {
			if strings.Contains(note, secret) {
				t.Errorf("%s: the note %q discloses %q", name, note, secret)
			}
		}
	}
	if notes[findkubeflex.ReasonSecretUnreadable] != notes[findkubeflex.ReasonNoKubeconfig] {
		t.Errorf("the notes tell a missing Secret (%q) from one without the key (%q)", notes[findkubeflex.ReasonSecretUnreadable], notes[findkubeflex.ReasonNoKubeconfig])
	}
	if !strings.Contains(notes["refused"], findkubeconfig.ReasonExec) {
		t.Errorf("the note %q of a refused kubeconfig does not say why", notes["refused"])
	}
}
