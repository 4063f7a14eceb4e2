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

package hostingwatch

import (
	"context"
	"reflect"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RememberMissingKinds returns c, whose GetInformer remembers for recheck
// (on clk) that the hosting cluster has no such kind, and answers so
// without asking it meanwhile. Every served space's reconciler and
// watches ask the hosting caches for the RolloutWave and RolloutFreeze
// kinds, and controller-runtime's REST mapper asks the API server's
// discovery again at every lookup of a kind it does not know: on a
// hosting cluster without them (kcp's provider workspace, say) that was
// 49 discovery requests a space during a rollout. Concurrent asks of a
// kind not known to exist wait for one answer. A kind once found is not
// asked for again.
func RememberMissingKinds(c cache.Cache, clk clock.PassiveClock, recheck time.Duration) cache.Cache {
	return &missingKinds{Cache: c, clock: clk, recheck: recheck, kinds: map[kindKey]*kindState{}}
}

// missingKinds is a cache that remembers the kinds the hosting cluster
// lacks (RememberMissingKinds).
type missingKinds struct {
	cache.Cache
	clock   clock.PassiveClock
	recheck time.Duration

	mu    sync.Mutex
	kinds map[kindKey]*kindState
}

// kindKey names a kind as asked for: the Go type of the object, and the
// kind it names when the type is generic (unstructured).
type kindKey struct {
	typ reflect.Type
	gvk schema.GroupVersionKind
}

// kindState is what is known of one kind.
type kindState struct {
	mu    sync.Mutex
	found bool
	// missing is the last no-match answer, believed until until.
	missing error
	until   time.Time
}

// GetInformer implements cache.Cache.
func (m *missingKinds) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	k := m.state(obj)
	k.mu.Lock()
	if k.found {
		k.mu.Unlock()
		return m.Cache.GetInformer(ctx, obj, opts...)
	}
	defer k.mu.Unlock()
	if k.missing != nil && m.clock.Now().Before(k.until) {
		return nil, k.missing
	}
	informer, err := m.Cache.GetInformer(ctx, obj, opts...)
	switch {
	case meta.IsNoMatchError(err):
		k.missing, k.until = err, m.clock.Now().Add(m.recheck)
	case err == nil:
		k.found, k.missing = true, nil
	}
	return informer, err
}

// state returns the state of obj's kind.
func (m *missingKinds) state(obj client.Object) *kindState {
	key := kindKey{typ: reflect.TypeOf(obj), gvk: obj.GetObjectKind().GroupVersionKind()}
	m.mu.Lock()
	defer m.mu.Unlock()
	k := m.kinds[key]
	if k == nil {
		k = &kindState{}
		m.kinds[key] = k
	}
	return k
}
