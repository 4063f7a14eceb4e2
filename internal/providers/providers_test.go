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

package providers

import (
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/internal/providers/kcp"
	findproviders "github.com/kubestellar/workload-stager/providers"
	findkcp "github.com/kubestellar/workload-stager/providers/kcp"
	findkubeconfig "github.com/kubestellar/workload-stager/providers/kubeconfig"
)

func TestHostingCacheOptions(t *testing.T) {
	scheme := runtime.NewScheme()
	spaceCache := cache.Options{
		Scheme:            scheme,
		DefaultNamespaces: map[string]cache.Config{"somewhere": {}},
		DefaultTransform:  cache.TransformStripManagedFields(),
	}

	for _, kind := range []string{findproviders.KindSingle, findproviders.KindKCP, "kcp,single"} {
		t.Run(kind+" returns the space cache unchanged", func(t *testing.T) {
			o := findproviders.NewOptions()
			o.Kind = kind
			got := HostingCacheOptions(o, spaceCache)
			if got.Scheme != scheme || !reflect.DeepEqual(got.DefaultNamespaces, spaceCache.DefaultNamespaces) ||
				got.ByObject != nil || got.DefaultTransform == nil {
				t.Errorf("HostingCacheOptions() = %+v, want the space cache %+v", got, spaceCache)
			}
		})
	}
	t.Run("kubeconfig with kcp narrows to the Secrets", func(t *testing.T) {
		o := findproviders.NewOptions()
		o.Kind = "kcp,kubeconfig"
		if got := HostingCacheOptions(o, spaceCache); len(got.ByObject) != 1 {
			t.Errorf("HostingCacheOptions() = %+v, want only the kubeconfig Secrets", got)
		}
	})

	tests := []struct {
		name      string
		namespace string
		label     string
	}{
		{name: "defaults", namespace: findkubeconfig.DefaultNamespace, label: findkubeconfig.DefaultLabel},
		{name: "custom namespace and label", namespace: "spaces", label: "example.com/space"},
	}
	for _, tt := range tests {
		t.Run("kubeconfig narrows to the Secrets: "+tt.name, func(t *testing.T) {
			o := findproviders.NewOptions()
			o.Kubeconfig.Namespace, o.Kubeconfig.Label = tt.namespace, tt.label
			got := HostingCacheOptions(o, spaceCache)

			if len(got.DefaultNamespaces) != 1 {
				t.Errorf("DefaultNamespaces = %v, want only %s", got.DefaultNamespaces, tt.namespace)
			}
			if _, ok := got.DefaultNamespaces[tt.namespace]; !ok {
				t.Errorf("DefaultNamespaces = %v, want %s", got.DefaultNamespaces, tt.namespace)
			}
			if got.DefaultTransform == nil {
				t.Errorf("DefaultTransform is nil, want managed fields stripped")
			}
			if len(got.ByObject) != 1 {
				t.Fatalf("ByObject = %v, want only Secrets", got.ByObject)
			}
			var selector labels.Selector
			for obj, by := range got.ByObject {
				if _, ok := obj.(*corev1.Secret); !ok {
					t.Errorf("ByObject key %T, want *v1.Secret", obj)
				}
				selector = by.Label
				if by.Transform == nil {
					t.Fatal("the Secrets are not screened by the kubeconfig policy")
				}
				out, err := by.Transform(&corev1.Secret{Data: map[string][]byte{o.Kubeconfig.Key: []byte("not a kubeconfig")}})
				if err != nil || out.(*corev1.Secret).Annotations[findkubeconfig.AnnotationRefusedReason] == "" {
					t.Errorf("the Secrets' transform let a malformed kubeconfig through: %v, %v", out, err)
				}
			}
			if selector == nil {
				t.Fatalf("Secrets are not narrowed by label")
			}
			for _, c := range []struct {
				labels labels.Set
				want   bool
			}{
				{labels.Set{tt.label: "true"}, true},
				{labels.Set{tt.label: "true", "team": "payments"}, true},
				{labels.Set{tt.label: "false"}, false},
				{labels.Set{tt.label: ""}, false},
				{labels.Set{"other": "true"}, false},
				{nil, false},
			} {
				if got := selector.Matches(c.labels); got != c.want {
					t.Errorf("selector %s matches %v = %v, want %v", selector, c.labels, got, c.want)
				}
			}
		})
	}
}

// TestNewLeavesTheProviderRunnable: the provider New returns is the one the
// manager must start (multicluster.ProviderRunnable), not a wrapper that
// hides its Start, for the kinds that engage their spaces when they run.
func TestNewLeavesTheProviderRunnable(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := findkcp.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	hosting, err := manager.New(&rest.Config{Host: "https://127.0.0.1:1"}, manager.Options{
		Scheme: scheme, Metrics: metricsserver.Options{BindAddress: "0"}, HealthProbeBindAddress: "0",
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, kind := range []string{findproviders.KindSingle, findproviders.KindKubeFlex + "," + findproviders.KindSingle} {
		o := findproviders.NewOptions()
		o.Kind = kind
		p, err := New(o, hosting, kcp.CacheOptions{})
		if err != nil {
			t.Fatalf("New(%s): %v", kind, err)
		}
		if _, ok := any(p).(multicluster.ProviderRunnable); !ok {
			t.Errorf("New(%s) returned %T, which the manager cannot start", kind, p)
		}
	}
}
