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

package kubeconfig

import (
	"bytes"
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestScreen: the cache's transform refuses, from the raw bytes, the
// kubeconfigs that would read files of the stager's (here /dev/zero, which
// ran it out of memory, and a FIFO no one writes to, which held the
// provider's worker for good) before anything parses them, and hands the
// provider a value client-go reads as naming nothing.
func TestScreen(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	const key = "kubeconfig"
	secret := func(raw []byte, annotations map[string]string) *corev1.Secret {
		return &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Name: "wds1", Namespace: "spaces", Annotations: annotations,
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
			Data: map[string][]byte{key: raw},
		}
	}
	screen := Policy{}.Screen(key)

	safe := write(t, func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo) {})
	forged := map[string]string{AnnotationRefused: "forged", AnnotationRefusedReason: ReasonExec, "team": "a"}
	out, err := screen(secret(safe, forged))
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Secret)
	if !bytes.Equal(got.Data[key], safe) || len(got.Annotations) != 1 || got.ManagedFields != nil {
		t.Errorf("an accepted Secret came out as %+v, want its kubeconfig, no refusal annotation and no managed fields", got)
	}
	if err := Screened(got); err != nil {
		t.Errorf("the Auditor would read a refusal from the writer's own annotations: %v", err)
	}

	for name, c := range map[string]struct {
		edit  func(*clientcmdapi.Config, *clientcmdapi.Cluster, *clientcmdapi.AuthInfo)
		field string
	}{
		"token file /dev/zero": {func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.TokenFile = "", "/dev/zero"
		}, `users["stager"].tokenFile`},
		"token file /dev/zero of the user \"\"": {func(cfg *clientcmdapi.Config, _ *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			cfg.Contexts["wds1"].AuthInfo = ""
			cfg.AuthInfos[""] = &clientcmdapi.AuthInfo{TokenFile: "/dev/zero"}
		}, `users[""].tokenFile`},
		"client key from a FIFO": {func(_ *clientcmdapi.Config, _ *clientcmdapi.Cluster, u *clientcmdapi.AuthInfo) {
			u.Token, u.ClientCertificateData, u.ClientKey = "", []byte("cert"), fifo
		}, `users["stager"].client-key`},
		"CA from a FIFO": {func(_ *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
			c.CertificateAuthorityData, c.CertificateAuthority = nil, fifo
		}, `clusters["wds1"].certificate-authority`},
	} {
		t.Run(name, func(t *testing.T) {
			out, err := screen(secret(write(t, c.edit), nil))
			if err != nil {
				t.Fatal(err)
			}
			got := out.(*corev1.Secret)
			if got.Annotations[AnnotationRefusedReason] != ReasonFileReference || !strings.Contains(got.Annotations[AnnotationRefused], c.field) {
				t.Errorf("annotations %v, want reason %s naming %s", got.Annotations, ReasonFileReference, c.field)
			}
			if err := Screened(got); ReasonOf(err) != ReasonFileReference || !strings.Contains(err.Error(), c.field) {
				t.Errorf("the Auditor reads %v, want reason %s naming %s", err, ReasonFileReference, c.field)
			}
			if !bytes.Equal(got.Data[key], screenedKubeconfig) {
				t.Errorf("the provider would get %q", got.Data[key])
			}
			if _, err := clientcmd.RESTConfigFromKubeConfig(got.Data[key]); err == nil {
				t.Error("client-go makes a client configuration of the screened value")
			}
		})
	}
}

// large returns a kubeconfig the guard accepts but for its size, of about
// size bytes: one certificate-authority-data of that size ("ca"), or
// as many clusters as make it ("clusters"), the two ways a writer pads one.
func large(tb testing.TB, shape string, size int) []byte {
	tb.Helper()
	return write(tb, func(cfg *clientcmdapi.Config, c *clientcmdapi.Cluster, _ *clientcmdapi.AuthInfo) {
		switch shape {
		case "ca":
			c.CertificateAuthorityData = bytes.Repeat([]byte{0xA5}, size*3/4)
		case "clusters":
			for i := range size / 64 {
				cfg.Clusters[fmt.Sprintf("pad%07d", i)] = &clientcmdapi.Cluster{Server: "https://pad.example:6443"}
			}
		}
	})
}

// BenchmarkScreen screens kubeconfig Secrets of 4 KiB, as real ones are,
// and of 1 MiB, the most a Secret holds, in the two shapes.
func BenchmarkScreen(b *testing.B) {
	const key = "kubeconfig"
	screen := Policy{}.Screen(key)
	for _, c := range []struct {
		shape string
		size  int
	}{{"ca", 4 << 10}, {"ca", 1 << 20}, {"clusters", 1 << 20}} {
		raw := large(b, c.shape, c.size)
		b.Run(fmt.Sprintf("%s-%dKiB", c.shape, len(raw)>>10), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wds1", Namespace: "spaces"},
					Data: map[string][]byte{key: raw}}
				if _, err := screen(secret); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// TestScreenTooLarge: the cache keeps no kubeconfig longer than
// MaxKubeconfigBytes, and records why, as for the other refusals.
func TestScreenTooLarge(t *testing.T) {
	const key = "kubeconfig"
	raw := large(t, "clusters", 1<<20)
	out, err := Policy{}.Screen(key)(&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "wds1", Namespace: "spaces"},
		Data: map[string][]byte{key: raw}})
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*corev1.Secret)
	if got.Annotations[AnnotationRefusedReason] != ReasonTooLarge || !bytes.Equal(got.Data[key], screenedKubeconfig) {
		t.Errorf("a kubeconfig of %d bytes came out with annotations %v and %d bytes, want reason %s and the screened value",
			len(raw), got.Annotations, len(got.Data[key]), ReasonTooLarge)
	}
	if err := Screened(got); ReasonOf(err) != ReasonTooLarge {
		t.Errorf("the Auditor reads %v, want reason %s", err, ReasonTooLarge)
	}
}
