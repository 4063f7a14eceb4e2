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

package plugin

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/cmd/kubectl-stager/app"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/stack"
)

// TestAllSpaces registers the suite's WDS twice, as kubeconfig Secrets
// "east" and "west" in the current context's cluster (standing for the
// stager's hosting cluster), and a third Secret asking to run an exec
// plugin: get --all-spaces shows every policy of both spaces, each row
// naming its space, and reports the refused Secret without running it.
func TestAllSpaces(t *testing.T) {
	ctx := suite.ctx
	const ns = "kubestellar-stager"
	if err := suite.wds.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
		t.Fatal(err)
	}
	ran := filepath.Join(t.TempDir(), "ran")
	exec := []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {exec: {apiVersion: client.authentication.k8s.io/v1, command: touch, args: [` + ran + `]}}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`)
	for name, kubeconfig := range map[string][]byte{"east": suite.wds.Kubeconfig(), "west": suite.wds.Kubeconfig(), "sneaky": exec} {
		secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
			Labels: map[string]string{"sigs.k8s.io/multicluster-runtime-kubeconfig": "true"}},
			Data: map[string][]byte{"kubeconfig": kubeconfig}}
		if err := suite.wds.Client.Create(ctx, secret); err != nil {
			t.Fatal(err)
		}
	}
	spread := rollout(t, "spread", nil)
	setStatus(t, spread, v1alpha1.StagedBindingPolicyStatus{Phase: v1alpha1.RolloutPending,
		Wave: &v1alpha1.WaveStatus{Name: "regions", Step: "canary", Position: "1/3", State: v1alpha1.WaveReleased}})
	policies := &v1alpha1.StagedBindingPolicyList{}
	if err := suite.wds.Client.List(ctx, policies); err != nil {
		t.Fatal(err)
	}

	var out, errOut bytes.Buffer
	cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, time.Now)
	cmd.SetArgs([]string{"--kubeconfig=" + suite.kubeconfig, "get", "--all-spaces", "--kubeconfig-namespace=" + ns})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("%v: %s %s", err, out.String(), errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if !strings.HasPrefix(lines[0], "SPACE") || len(lines) != 1+2*len(policies.Items) {
		t.Fatalf("want a SPACE column and a row per policy of each space (%d policies):\n%s", len(policies.Items), out.String())
	}
	for _, space := range []string{"east", "west"} {
		for _, p := range policies.Items {
			found := false
			for _, l := range lines[1:] {
				fields := strings.Fields(l)
				found = found || fields[0] == space && fields[1] == p.Name
			}
			if !found {
				t.Errorf("no row for %s in space %s:\n%s", p.Name, space, out.String())
			}
		}
	}
	if fields := strings.Fields(lines[0]); !slices.Equal(fields[:6], []string{"SPACE", "NAME", "STAGES", "PHASE", "REVISION", "WAVE"}) {
		t.Errorf("want the WAVE column after REVISION: %s", lines[0])
	}
	for _, l := range lines[1:] {
		if fields := strings.Fields(l); fields[1] == "spread" && !strings.Contains(l, "regions 1/3") {
			t.Errorf("the row of spread does not show its wave: %s", l)
		}
	}
	if !strings.Contains(errOut.String(), "space sneaky: not usable: Exec") {
		t.Errorf("the exec Secret is not reported: %q", errOut.String())
	}
	if _, err := os.Stat(ran); err == nil {
		t.Error("the exec Secret's command ran")
	}
}

// TestAllSpacesFromControlPlanes registers the suite's WDS as a Ready WDS
// ControlPlane of a hosting space with KubeFlex's CRD, and the same WDS as a
// ControlPlane that is not Ready and as an ITS: get --all-spaces --provider
// kubeflex shows the Ready WDS's policies and reports the one not Ready.
func TestAllSpacesFromControlPlanes(t *testing.T) {
	ctx := suite.ctx
	crds, err := stack.KubeFlexCRDDir()
	if err != nil {
		t.Fatal(err)
	}
	hosting, err := environment.StartSpace("kubeflex-hosting", environment.WithCRDDirs(crds))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = hosting.Stop() })
	for name, cpType := range map[string]string{"kf-wds": stack.ControlPlaneTypeWDS, "kf-pending": stack.ControlPlaneTypeWDS, "kf-its": stack.ControlPlaneTypeITS} {
		if err := stack.RegisterControlPlane(ctx, hosting.Client, name, cpType, suite.wds.Kubeconfig()); err != nil {
			t.Fatal(err)
		}
	}
	if err := stack.SetControlPlaneReady(ctx, hosting.Client, "kf-pending", false); err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(t.TempDir(), "hosting.kubeconfig")
	if err := os.WriteFile(kubeconfig, hosting.Kubeconfig(), 0o600); err != nil {
		t.Fatal(err)
	}
	rollout(t, "flexed", nil)

	var out, errOut bytes.Buffer
	cmd := app.New(genericiooptions.IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut}, time.Now)
	cmd.SetArgs([]string{"--kubeconfig=" + kubeconfig, "get", "flexed", "-A", "--provider=kubeflex"})
	if err := cmd.ExecuteContext(ctx); err != nil {
		t.Fatalf("%v: %s %s", err, out.String(), errOut.String())
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !strings.HasPrefix(lines[1], "kf-wds ") || !strings.Contains(lines[1], " flexed ") {
		t.Errorf("want one row, of flexed in space kf-wds:\n%s", out.String())
	}
	if !strings.Contains(errOut.String(), "space kf-pending: not usable: NotReady") || strings.Contains(errOut.String()+out.String(), "kf-its") {
		t.Errorf("want kf-pending reported as not Ready and kf-its ignored; errors: %q", errOut.String())
	}
}
