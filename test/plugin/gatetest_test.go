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
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// TestGateTestOutputs runs `kubectl stager test` on the GateTests of
// internal/gatetest (all pass) and of testdata/gatetest (a mismatch, a case
// that cannot be judged, files that cannot be read) and compares what it
// prints, and its JUnit report, with golden files.
func TestGateTestOutputs(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	out, err := run(t, now, "", "test", "../../internal/gatetest/testdata/web")
	if err != nil {
		t.Errorf("test of passing cases: %v", err)
	}
	golden(t, "gatetest-pass", out)

	junit := filepath.Join(t.TempDir(), "report.xml")
	out, err = run(t, now, "", "test", "testdata/gatetest/mismatch", "testdata/gatetest/bad", "--junit", junit)
	if err == nil || err.Error() != "2 case(s) failed, 1 could not be judged, 3 file(s) could not be read" {
		t.Errorf("test of failing cases: error %v", err)
	}
	golden(t, "gatetest-mismatch", out)
	report, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "gatetest-junit", string(report))
}

// TestRecordReplay records a stage of a live policy whose status says what
// the controller says of it (its Progressing condition and stage record,
// as Plan writes them), replays it with `kubectl stager test`, which must
// agree, then edits the recorded CombinedStatus so that the condition
// holds, and sees test report the mismatch. No credential of the
// kubeconfig it ran with is written.
func TestRecordReplay(t *testing.T) {
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	p := rollout(t, "rec", nil)
	t.Cleanup(func() { removePolicy(p) }) // TestOutputs lists every policy
	place(t, p, "dev")
	const waiting = "condition holds for 0 of 1 object(s); not yet for deployments.apps web/rec"
	setStatus(t, p, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: v1alpha1.RolloutProgressing,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonConditionNotMet, `stage "dev": `+waiting, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-time.Hour)), BindingPolicy: "rec.stage.dev", Message: waiting},
			{Name: "test", Phase: v1alpha1.StagePending}, {Name: "prod", Phase: v1alpha1.StagePending},
		}})

	dir := filepath.Join(t.TempDir(), "rec-dev")
	hide := func(s string) string { return strings.ReplaceAll(s, dir, "DIR") }
	out, err := run(t, now, "", "record", "rec", "--stage", "dev", "-o", dir)
	if err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	golden(t, "record", hide(out))
	recorded, err := os.ReadFile(filepath.Join(dir, "gatetest.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	golden(t, "record-gatetest", string(recorded))
	if _, err := run(t, now, "", "record", "rec", "--stage", "dev", "-o", dir); err == nil || !strings.Contains(err.Error(), "already holds a gatetest.yaml") {
		t.Errorf("a second record into the same directory: %v", err)
	}
	assertNoCredentials(t, dir)

	out, err = run(t, now, "", "test", dir)
	if err != nil {
		t.Errorf("replay: %v", err)
	}
	golden(t, "record-replay", hide(out))

	// The same case on the WDS's policy (policyRef) passes too.
	ref := strings.Replace(string(recorded), "policy: policy.yaml", "policyRef: {name: rec}", 1)
	if ref == string(recorded) {
		t.Fatal("the recorded gatetest.yaml names no policy.yaml")
	}
	if err := os.WriteFile(filepath.Join(dir, "ref.gatetest.yaml"), []byte(ref), 0o600); err != nil {
		t.Fatal(err)
	}
	if out, err := run(t, now, "", "test", filepath.Join(dir, "ref.gatetest.yaml")); err != nil ||
		!strings.Contains(out, "(StagedBindingPolicy rec)") || !strings.Contains(out, "1 passed") {
		t.Errorf("replay with policyRef: %v\n%s", err, out)
	}
	if err := os.Remove(filepath.Join(dir, "ref.gatetest.yaml")); err != nil {
		t.Fatal(err)
	}

	statuses := filepath.Join(dir, "combinedstatuses.yaml")
	data, err := os.ReadFile(statuses)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(data), `float: "0"`) {
		t.Fatalf("the recorded statuses hold no 0:\n%s", data)
	}
	if err := os.WriteFile(statuses, []byte(strings.Replace(string(data), `float: "0"`, `float: "1"`, 1)), 0o600); err != nil {
		t.Fatal(err)
	}
	out, err = run(t, now, "", "test", dir)
	if err == nil {
		t.Errorf("replay of an edited status passed")
	}
	golden(t, "record-edited", hide(out))
}

// removePolicy deletes a policy and the BindingPolicy place made for its
// dev stage, so that the tests that list them see only their own.
func removePolicy(p *v1alpha1.StagedBindingPolicy) {
	_ = suite.wds.Client.Delete(suite.ctx, &ksv1alpha1.BindingPolicy{ObjectMeta: metav1.ObjectMeta{
		Name: v1alpha1.StagePlacement(p.Name, "dev").String()}})
	_ = suite.wds.Client.Delete(suite.ctx, p)
}

// assertNoCredentials fails when a file under dir holds a credential of
// the suite's kubeconfig, as written or base64-encoded.
func assertNoCredentials(t *testing.T, dir string) {
	t.Helper()
	config, err := clientcmd.LoadFromFile(suite.kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	var secrets []string
	for _, a := range config.AuthInfos {
		for _, s := range []string{a.Token, a.Password, string(a.ClientKeyData), string(a.ClientCertificateData)} {
			if len(s) >= 8 {
				secrets = append(secrets, s, base64.StdEncoding.EncodeToString([]byte(s)))
			}
		}
	}
	if len(secrets) == 0 {
		t.Fatal("the suite's kubeconfig holds no credential to look for")
	}
	assertNoneOf(t, dir, "a credential of the kubeconfig", secrets)
}

// assertNoneOf fails when a file under dir holds one of secrets, which
// are what.
func assertNoneOf(t *testing.T, dir, what string, secrets []string) {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range secrets {
			if strings.Contains(string(data), s) {
				t.Errorf("%s holds %s (%.20q...)", e.Name(), what, s)
			}
		}
	}
}

// TestRecordAnalysisWithToken records a stage with an analysis whose
// MetricProvider needs a CA and a bearer token from a Secret: the answer
// is recorded, the replay agrees with what the controller recorded, and
// neither the token nor the CA is in the directory.
func TestRecordAnalysisWithToken(t *testing.T) {
	const secretNamespace, token = "record-secrets", "rec0rd-s3cret-token"
	api := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("Authorization") != "Bearer "+token {
			http.Error(w, `{"status":"error","errorType":"unauthorized","error":"no token"}`, http.StatusUnauthorized)
			return
		}
		_, _ = w.Write([]byte(`{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"0.004"]}]}}`))
	}))
	t.Cleanup(api.Close)
	c := suite.wds.Client
	ca := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: api.Certificate().Raw})
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: secretNamespace}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: "prom-access",
		Labels: map[string]string{hostingv1alpha1.CredentialLabel: "true"}}, Data: map[string][]byte{"ca.crt": ca, "token": []byte(token)}}
	provider := &hostingv1alpha1.MetricProvider{ObjectMeta: metav1.ObjectMeta{Name: "recorded-prom"},
		Spec: hostingv1alpha1.MetricProviderSpec{Spaces: []string{hostingv1alpha1.AllSpaces}, Prometheus: &hostingv1alpha1.PrometheusProvider{Address: api.URL,
			CASecretRef:          &hostingv1alpha1.SecretKeyRef{Name: "prom-access", Key: "ca.crt"},
			BearerTokenSecretRef: &hostingv1alpha1.SecretKeyRef{Name: "prom-access", Key: "token"}}}}
	for _, obj := range []client.Object{ns, secret, provider} {
		if err := c.Create(suite.ctx, obj); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() { _ = c.Delete(suite.ctx, provider); _ = c.Delete(suite.ctx, ns) })
	p := rollout(t, "recmeasured", func(p *v1alpha1.StagedBindingPolicy) {
		p.Spec.Stages[0].Analysis = []v1alpha1.Analysis{{Name: "error-rate", Provider: "recorded-prom", Query: "vector(0.004)",
			SuccessCondition: "result.all(v, v < 0.01)"}}
	})
	t.Cleanup(func() { removePolicy(p) })
	place(t, p, "dev")
	now := time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC)
	const waiting = "condition holds for 0 of 1 object(s); not yet for deployments.apps web/recmeasured"
	setStatus(t, p, v1alpha1.StagedBindingPolicyStatus{ActiveStage: "dev", Phase: v1alpha1.RolloutProgressing,
		Conditions: []metav1.Condition{
			trueCondition(v1alpha1.ConditionProgressing, v1alpha1.ReasonConditionNotMet, `stage "dev": `+waiting, now),
		},
		Stages: []v1alpha1.StageStatus{
			{Name: "dev", Phase: v1alpha1.StageActive, StartTime: at(now.Add(-time.Hour)), PlacedTime: at(now.Add(-time.Hour)),
				BindingPolicy: "recmeasured.stage.dev", Message: waiting},
			{Name: "test", Phase: v1alpha1.StagePending}, {Name: "prod", Phase: v1alpha1.StagePending},
		}})

	dir := filepath.Join(t.TempDir(), "recmeasured-dev")
	out, err := run(t, now, "", "record", "recmeasured", "--analysis", "-o", dir, "--metric-provider-secret-namespace", secretNamespace)
	if err != nil {
		t.Fatalf("record: %v\n%s", err, out)
	}
	answer, err := os.ReadFile(filepath.Join(dir, "analysis-error-rate.yaml"))
	if err != nil || !strings.Contains(string(answer), "- 0.004") {
		t.Errorf("the recorded answer: %v\n%s", err, answer)
	}
	if out, err := run(t, now, "", "test", dir); err != nil {
		t.Errorf("replay: %v\n%s", err, out)
	}
	assertNoneOf(t, dir, "the MetricProvider's Secret", []string{token, base64.StdEncoding.EncodeToString([]byte(token)),
		string(ca), base64.StdEncoding.EncodeToString(ca), "prom-access"})
	assertNoCredentials(t, dir)
}

// TestGateTestHostileTextIsEscaped runs a GateTest whose case name,
// expected message and CombinedStatus carry terminal control sequences
// and a U+202E, and requires that no control character other than a
// newline or tab reaches the output, and that the JUnit report holds none
// XML cannot.
func TestGateTestHostileTextIsEscaped(t *testing.T) {
	dir := t.TempDir()
	src := "testdata/gatetest/mismatch"
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(src, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		text := string(data)
		switch e.Name() {
		case "gatetest.yaml":
			text = strings.Replace(text, "name: dev is done (it is not)", fmt.Sprintf("name: %q", "dev is done"+hideText+rightToLeft), 1)
			text = strings.Replace(text, "message: not yet for deployments.apps default/web", fmt.Sprintf("message: %q", writeClipoard), 1)
		case "statuses.yaml":
			text = strings.Replace(text, "columnNames: [available]", fmt.Sprintf("columnNames: [%q]", "avail"+hideText), 1)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	junit := filepath.Join(t.TempDir(), "report.xml")
	out, err := run(t, time.Time{}, "", "test", dir, "--junit", junit)
	if err == nil {
		t.Fatal("a run with mismatches passed")
	}
	report, err := os.ReadFile(junit)
	if err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"output": out, "JUnit report": string(report)} {
		for _, r := range text {
			if r != '\n' && r != '\t' && (unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)) {
				t.Errorf("the %s holds %U", name, r)
				break
			}
		}
	}
	for _, escaped := range []string{`\x1b[8m`, `\u202e`, `\x1b]52`} {
		if !strings.Contains(out, escaped) {
			t.Errorf("the output does not show %s escaped:\n%s", escaped, out)
		}
	}
}
