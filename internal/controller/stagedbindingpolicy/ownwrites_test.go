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

package stagedbindingpolicy

import (
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout/rollouttest"
)

// TestOwnWritesAreReadBeforeTheCacheHasThem: while the cache holds a
// version that the reconciler's writes replaced, runs read the last write;
// once the cache has the write, or a version the reconciler did not write,
// or another policy of the same name, they read the cache.
func TestOwnWritesAreReadBeforeTheCacheHasThem(t *testing.T) {
	version := func(uid types.UID, rv, active string) *v1alpha1.StagedBindingPolicy {
		p := rollouttest.NewPolicy()
		p.UID, p.ResourceVersion, p.Status.ActiveStage = uid, rv, active
		return p
	}
	var own ownWrites
	v1 := version("uid", "1", "dev")
	if got := own.freshest(v1); got != v1 {
		t.Error("without a write, the cached policy is not the freshest")
	}

	own.record(v1, version("uid", "2", "test"))
	if got := own.freshest(v1); got.ResourceVersion != "2" || got.Status.ActiveStage != "test" {
		t.Errorf("cache at 1 after a write of 2: read %s (%s), want the write", got.ResourceVersion, got.Status.ActiveStage)
	}
	// A second write, on the first, before the cache caught up with either.
	own.record(version("uid", "2", "test"), version("uid", "3", "prod"))
	if got := own.freshest(v1); got.ResourceVersion != "3" {
		t.Errorf("cache at 1 after writes of 2 and 3: read %s, want 3", got.ResourceVersion)
	}
	if got := own.freshest(version("uid", "2", "test")); got.ResourceVersion != "3" {
		t.Errorf("cache at 2 after writes of 2 and 3: read %s, want 3", got.ResourceVersion)
	}
	caught := version("uid", "3", "prod")
	if got := own.freshest(caught); got != caught {
		t.Error("once the cache has the write, it is not what runs read")
	}
	if got := own.freshest(v1); got != v1 {
		t.Error("the entry outlived the cache catching up")
	}

	own.record(v1, version("uid", "2", "test"))
	other := version("uid", "9", "dev") // someone else wrote after the reconciler
	if got := own.freshest(other); got != other {
		t.Error("a version the reconciler did not write lost to its older write")
	}

	own.record(v1, version("uid", "2", "test"))
	recreated := version("new-uid", "1", "")
	if got := own.freshest(recreated); got != recreated {
		t.Error("a new policy of the same name read the old one's write")
	}

	own.record(v1, version("uid", "2", "test"))
	own.forget(types.NamespacedName{Name: v1.Name})
	if got := own.freshest(v1); got != v1 {
		t.Error("a forgotten policy's write is still read")
	}
}
