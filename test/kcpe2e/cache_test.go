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

package kcpe2e

import (
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/controller/spaces"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/policytest"
)

const (
	// cacheBound is the stager's --space-cache-max-bytes in this suite.
	cacheBound = 4 << 20
	// floodSize is the annotation each flooding BindingPolicy carries.
	floodSize = 240 << 10
	// floodForeign is how many BindingPolicies no policy of the stager's
	// owns are written (9.4 MiB, past the bound were they cached).
	floodForeign = 40
	// floodLabelled is how many BindingPolicies labelled as a policy's are
	// written next (5.6 MiB, which the cache does hold: past the bound).
	floodLabelled = 24
)

// TestFloodedWorkspaceIsContained floods one workspace with large
// BindingPolicies while another workspace rolls out, through the caches the
// kcp provider shares among workspaces: those no policy owns are not
// cached at all; those labelled as a policy's take the workspace past its
// bound, and it alone is reported and no longer served.
func TestFloodedWorkspaceIsContained(t *testing.T) {
	flooded, err := addWorkspace(suite.ctx, "flood")
	if err != nil {
		t.Fatalf("adding the flooded workspace: %v", err)
	}
	other := wdsNamed("wds1")
	waitForSpaceReady(t, flooded.space)
	waitForSpaceReady(t, other.space)
	const name = "calm"
	startRollout(t, other, name)
	waitForStage(t, other, name, "dev", v1alpha1.RolloutProgressing)

	start := time.Now()
	flood(t, flooded, "foreign", floodForeign, nil)
	t.Logf("wrote %d BindingPolicies of %d KiB in %s", floodForeign, floodSize>>10, time.Since(start).Round(time.Millisecond))
	// kcp, busy with the flood, may answer a probe late (the stager probes
	// every 2 s here) and the space flap; a space refused for its cache
	// bound would never be served again.
	notOver := func(text string) error {
		if v, ok := gauge(text, "stager_space_cache_over_limit", flooded.space); ok && v != 0 {
			return fmt.Errorf("stager_space_cache_over_limit = %v", v)
		}
		if v, ok := gauge(text, "stager_space_cache_bytes", flooded.space); !ok || v > 1<<20 {
			return fmt.Errorf("stager_space_cache_bytes = %v (present %t), want under a MiB", v, ok)
		}
		return nil
	}
	environment.Eventually(t, timeout, flooded.space+" served after the flood, its cache holding no foreign BindingPolicy", func() error {
		text, err := metrics(suite.ctx)
		if err != nil {
			return err
		}
		if v, ok := gauge(text, "stager_space_ready", flooded.space); !ok || v != 1 {
			return fmt.Errorf("stager_space_ready = %v (present %t)", v, ok)
		}
		return notOver(text)
	})
	environment.Consistently(t, 3*time.Second, flooded.space+" never over its cache bound", func() error {
		text, err := metrics(suite.ctx)
		if err != nil {
			return err
		}
		return notOver(text)
	})

	flood(t, flooded, "labelled", floodLabelled, map[string]string{v1alpha1.PolicyLabel: "squatter"})
	environment.Eventually(t, timeout, flooded.space+" reported over its cache bound", func() error {
		text, err := metrics(suite.ctx)
		if err != nil {
			return err
		}
		if v, ok := gauge(text, "stager_space_cache_over_limit", flooded.space); !ok || v != 1 {
			return fmt.Errorf("stager_space_cache_over_limit = %v (present %t)", v, ok)
		}
		if v, ok := gauge(text, "stager_space_ready", flooded.space); !ok || v != 0 {
			return fmt.Errorf("stager_space_ready = %v (present %t)", v, ok)
		}
		return nil
	})
	environment.Eventually(t, timeout, "the Warning Event in "+flooded.space, func() error {
		list := &eventsv1.EventList{}
		if err := flooded.client.List(suite.ctx, list, client.InNamespace(metav1.NamespaceDefault)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == spaces.EventReasonCacheOverLimit && e.Type == corev1.EventTypeWarning {
				if !strings.Contains(e.Note, "--space-cache-max-bytes") {
					return fmt.Errorf("the Event's note %q does not name the bound", e.Note)
				}
				return nil
			}
		}
		return errors.New("none yet")
	})

	// The other workspace goes on to the end meanwhile.
	makeAvailable(other, name)
	waitForStage(t, other, name, "prod", v1alpha1.RolloutCompleted)
	text, err := metrics(suite.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v, ok := gauge(text, "stager_space_ready", flooded.space); !ok || v != 0 {
		t.Errorf("%s is served again while over its bound: stager_space_ready = %v (present %t)", flooded.space, v, ok)
	}
	if err := flooded.client.DeleteAllOf(suite.ctx, &ksv1alpha1.BindingPolicy{}, client.HasLabels{v1alpha1.PolicyLabel}); err != nil {
		t.Errorf("deleting the labelled BindingPolicies: %v", err)
	}
}

// gauge returns the value of a metric's series of a space in text.
func gauge(text, metric, space string) (float64, bool) {
	re := regexp.MustCompile("(?m)^" + regexp.QuoteMeta(metric) + `\{[^}]*space="` + regexp.QuoteMeta(space) + `"[^}]*\} (\S+)$`)
	m := re.FindStringSubmatch(text)
	if m == nil {
		return 0, false
	}
	v, err := strconv.ParseFloat(m[1], 64)
	return v, err == nil
}

// flood creates n BindingPolicies of floodSize named prefix-<i> in w, with
// the given labels.
func flood(t *testing.T, w *wds, prefix string, n int, labels map[string]string) {
	t.Helper()
	if err := policytest.CreateBindingPolicies(suite.ctx, w.client, prefix, n, floodSize, labels); err != nil {
		t.Fatalf("flooding %s: %v", w.space, err)
	}
}
