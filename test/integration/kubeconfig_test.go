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

package integration

import (
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	mckubeconfig "github.com/kubestellar/workload-stager/internal/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// recordingServer is an https server that records the Authorization headers
// it receives: a server of a Secret writer's choice.
type recordingServer struct {
	*httptest.Server
	mu      sync.Mutex
	headers []string
}

func startRecordingServer(t *testing.T) *recordingServer {
	t.Helper()
	r := &recordingServer{}
	r.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.headers = append(r.headers, req.Header.Get("Authorization"))
		r.mu.Unlock()
		http.Error(w, "not a Kubernetes API server", http.StatusNotFound)
	}))
	t.Cleanup(r.Close)
	return r
}

// sawAuthorization reports whether a request carried the given header value.
func (r *recordingServer) sawAuthorization(value string) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, h := range r.headers {
		if h == value {
			return true
		}
	}
	return false
}

// caData is the PEM of the server's certificate, to trust it.
func (r *recordingServer) caData() []byte {
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.Certificate().Raw})
}

// kubeconfigFor returns a one-context kubeconfig for server, changed by edit.
func kubeconfigFor(t *testing.T, server string, caData []byte, edit func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo)) []byte {
	t.Helper()
	cluster := &clientcmdapi.Cluster{Server: server, CertificateAuthorityData: caData}
	user := &clientcmdapi.AuthInfo{Token: "harmless"}
	edit(cluster, user)
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["target"] = cluster
	cfg.AuthInfos["user"] = user
	cfg.Contexts["target"] = &clientcmdapi.Context{Cluster: "target", AuthInfo: "user"}
	cfg.CurrentContext = "target"
	raw, err := clientcmd.Write(*cfg)
	if err != nil {
		t.Fatalf("writing a kubeconfig: %v", err)
	}
	return raw
}

// refusedEvent waits for the Warning Event on a refused Secret and returns its note.
func refusedEvent(t *testing.T, secret string) string {
	t.Helper()
	return secretEvent(t, secret, mckubeconfig.EventReasonRefused, corev1.EventTypeWarning)
}

// secretEvent waits for an Event of the given reason and type on a Secret
// and returns its note.
func secretEvent(t *testing.T, secret, reason, eventType string) string {
	t.Helper()
	var note string
	waitFor(t, fmt.Sprintf("a %s Event on Secret %s", reason, secret), func() error {
		list := &eventsv1.EventList{}
		if err := suite.hosting.Client.List(suite.ctx, list, client.InNamespace(secretNamespace)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "Secret" && e.Regarding.Name == secret && e.Reason == reason {
				if e.Type != eventType {
					return fmt.Errorf("the Event is of type %s", e.Type)
				}
				note = e.Note
				return nil
			}
		}
		return fmt.Errorf("none among %d Events", len(list.Items))
	})
	return note
}

// TestKubeconfigSecretsAreGuarded registers kubeconfig Secrets that would run
// a command in the stager, send the stager's own files to a server of the
// writer's choice, or cannot be read at all. None becomes a space; each is
// reported with a Warning Event naming the offending field and a metric.
// Mended, a Secret becomes a space.
func TestKubeconfigSecretsAreGuarded(t *testing.T) {
	target := startRecordingServer(t)
	dir := t.TempDir()
	marker := filepath.Join(dir, "exec-ran")
	stolen := "stager-own-token-" + fmt.Sprint(time.Now().UnixNano())
	tokenFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokenFile, []byte(stolen), 0o600); err != nil {
		t.Fatal(err)
	}

	// A FIFO no one writes to: a kubeconfig naming it held the provider's
	// only worker for good, when client-go opened it before the guard ran.
	fifo := filepath.Join(dir, "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	// client-go takes users[""] for a context that names no user.
	noUser, err := clientcmd.Load(kubeconfigFor(t, target.URL, target.caData(), func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {}))
	if err != nil {
		t.Fatal(err)
	}
	noUser.Contexts["target"].AuthInfo = ""
	noUser.AuthInfos = map[string]*clientcmdapi.AuthInfo{"": {TokenFile: tokenFile}}
	noUserRaw, err := clientcmd.Write(*noUser)
	if err != nil {
		t.Fatal(err)
	}

	cases := []struct {
		secret string
		raw    []byte
		reason string
		field  string
	}{{
		secret: "guard-no-user",
		raw:    noUserRaw,
		reason: kubeconfig.ReasonFileReference, field: `users[""].tokenFile`,
	}, {
		secret: "guard-fifo",
		raw: kubeconfigFor(t, target.URL, target.caData(), func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificate, u.ClientKeyData = "", fifo, []byte("key")
		}),
		reason: kubeconfig.ReasonFileReference, field: `users["user"].client-certificate`,
	}, {
		secret: "guard-exec",
		raw: kubeconfigFor(t, target.URL, target.caData(), func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token = ""
			u.Exec = &clientcmdapi.ExecConfig{APIVersion: "client.authentication.k8s.io/v1", Command: "/bin/sh",
				Args: []string{"-c", "touch " + marker}, InteractiveMode: clientcmdapi.NeverExecInteractiveMode}
		}),
		reason: kubeconfig.ReasonExec, field: `users["user"].exec`,
	}, {
		secret: "guard-token-file",
		raw: kubeconfigFor(t, target.URL, target.caData(), func(_ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.TokenFile = "", tokenFile
		}),
		reason: kubeconfig.ReasonFileReference, field: `users["user"].tokenFile`,
	}, {
		secret: "guard-insecure",
		raw: kubeconfigFor(t, target.URL, nil, func(c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.InsecureSkipTLSVerify = true
		}),
		reason: kubeconfig.ReasonInsecureTLS, field: `clusters["target"].insecure-skip-tls-verify`,
	}, {
		secret: "guard-http",
		raw:    kubeconfigFor(t, strings.Replace(target.URL, "https://", "http://", 1), nil, func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {}),
		reason: kubeconfig.ReasonInsecureServer, field: `clusters["target"].server`,
	}, {
		secret: "guard-no-context",
		raw: []byte(strings.Replace(string(kubeconfigFor(t, target.URL, target.caData(), func(*clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {})),
			"current-context: target", "current-context: \"\"", 1)),
		reason: kubeconfig.ReasonMalformed, field: "current-context",
	}, {
		secret: "guard-bad-yaml",
		raw:    []byte("clusters: [this is: not: a kubeconfig"),
		reason: kubeconfig.ReasonMalformed, field: "does not parse",
	}, {
		secret: "guard-missing-key",
		raw:    nil,
		reason: kubeconfig.ReasonMissingKey, field: "data[kubeconfig]",
	}}

	for _, c := range cases {
		secret := &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: secretNamespace, Name: c.secret,
				Labels: map[string]string{environment.DefaultKubeconfigSecretLabel: "true"}},
			Data: map[string][]byte{},
		}
		if c.raw != nil {
			secret.Data[environment.KubeconfigSecretKey] = c.raw
		} else {
			secret.Data["config"] = []byte("under another key")
		}
		if err := suite.hosting.Client.Create(suite.ctx, secret); err != nil {
			t.Fatalf("creating Secret %s: %v", c.secret, err)
		}
		t.Cleanup(func() {
			_ = environment.UnregisterKubeconfigSecret(suite.ctx, suite.hosting.Client, secretNamespace, c.secret)
		})
	}

	// Whatever the provider does with them takes well under this.
	environment.Consistently(t, 3*time.Second, "no refused Secret to become a space, run a command or send a file", func() error {
		for _, c := range cases {
			if state, ok := spaceState(suite.stager, c.secret); ok {
				return fmt.Errorf("Secret %s became a space: %+v", c.secret, state)
			}
		}
		if _, err := os.Stat(marker); err == nil {
			return fmt.Errorf("the exec credential plugin ran in the stager")
		}
		if target.sawAuthorization("Bearer " + stolen) {
			return fmt.Errorf("the stager sent the content of its file %s to %s", tokenFile, target.URL)
		}
		return nil
	})

	for _, c := range cases {
		note := refusedEvent(t, c.secret)
		if !strings.Contains(note, c.field) {
			t.Errorf("Secret %s: the Event's note %q does not name %s", c.secret, note, c.field)
		}
		if len(note) > 1024 {
			t.Errorf("Secret %s: the Event's note has %d bytes", c.secret, len(note))
		}
		if strings.Contains(note, stolen) || strings.Contains(note, "harmless") {
			t.Errorf("Secret %s: the Event's note shows a credential: %q", c.secret, note)
		}
		waitFor(t, "the refusal metric of "+c.secret, func() error {
			if v, ok := metricValue(t, "stager_kubeconfig_secret_refused", map[string]string{"secret": c.secret, "reason": c.reason}); !ok || v != 1 {
				return fmt.Errorf("stager_kubeconfig_secret_refused{secret=%s,reason=%s} = %v (present %t)", c.secret, c.reason, v, ok)
			}
			return nil
		})
	}
	// Mended, the exec Secret becomes a space and its refusal goes away.
	mended := newSpace(t, "mended", false)
	raw, err := mended.AddUser(stagerUser)
	if err != nil {
		t.Fatal(err)
	}
	if err := environment.RegisterKubeconfigSecret(suite.ctx, suite.hosting.Client, secretNamespace, "guard-exec", "", raw); err != nil {
		t.Fatal(err)
	}
	waitForSpace(t, suite.stager, "guard-exec", false, spaces.ReasonMissingAPIs)
	if note := secretEvent(t, "guard-exec", mckubeconfig.EventReasonAccepted, corev1.EventTypeNormal); !strings.Contains(note, "is accepted") {
		t.Errorf("the %s Event says %q", mckubeconfig.EventReasonAccepted, note)
	}
	waitFor(t, "the refusal metric of guard-exec to go", func() error {
		if n := series(t, map[string]string{"secret": "guard-exec"}); n != 0 {
			return fmt.Errorf("%d series left", n)
		}
		return nil
	})
}
