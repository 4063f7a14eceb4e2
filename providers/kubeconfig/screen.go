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
	"errors"
	"strings"

	corev1 "k8s.io/api/core/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

const (
	// AnnotationRefused carries, on the cached copy of a refused kubeconfig
	// Secret, why it was refused; the Secret's own value is dropped.
	AnnotationRefused = "community.kubestellar.io/kubeconfig-refused"
	// AnnotationRefusedReason carries the reason of the refusal.
	AnnotationRefusedReason = "community.kubestellar.io/kubeconfig-refused-reason"
)

// screenedKubeconfig replaces a refused kubeconfig in the cache: client-go
// reads it as an empty configuration, which names no file and no server.
var screenedKubeconfig = []byte("# refused by the workload stager: see the Events of this Secret\n")

// Screen returns the transform of the hosting cluster's cache for the
// kubeconfig Secrets: it checks the kubeconfig under key as the Secret's
// raw bytes, before anything else in the stager parses it, and replaces a
// refused one by screenedKubeconfig, recording why in AnnotationRefused and
// AnnotationRefusedReason (which it removes from every Secret first, so that
// no writer sets them).
//
// multicluster-runtime's kubeconfig provider hands a Secret's bytes to
// client-go before its RESTOptions hook runs, and client-go reads tokenFile
// and opens certificate-authority, client-certificate and client-key there:
// a token file of /dev/zero ran the stager out of memory, a FIFO held the
// provider's only worker. The provider reads its Secrets from this cache,
// so it sees only screened ones. It strips managed fields too, as the
// cache's default transform does.
func (p Policy) Screen(key string) toolscache.TransformFunc {
	strip := cache.TransformStripManagedFields()
	return func(obj any) (any, error) {
		obj, err := strip(obj)
		if err != nil {
			return obj, err
		}
		secret, ok := obj.(*corev1.Secret)
		if !ok {
			return obj, nil
		}
		delete(secret.Annotations, AnnotationRefused)
		delete(secret.Annotations, AnnotationRefusedReason)
		raw, ok := secret.Data[key]
		if !ok {
			return secret, nil
		}
		err = p.Check(raw)
		if err == nil {
			return secret, nil
		}
		var refused *RefusedError
		if !errors.As(err, &refused) {
			refused = &RefusedError{Violations: []Violation{{Reason: ReasonMalformed, Why: err.Error()}}}
		}
		if secret.Annotations == nil {
			secret.Annotations = map[string]string{}
		}
		secret.Annotations[AnnotationRefusedReason] = refused.Reason()
		secret.Annotations[AnnotationRefused] = strings.TrimPrefix(refused.Error(), refusedPrefix)
		secret.Data[key] = screenedKubeconfig
		return secret, nil
	}
}

// Screened returns the refusal Screen recorded on secret, if any: the
// provider and the Auditor read their Secrets from the screened cache.
func Screened(secret *corev1.Secret) error {
	why, ok := secret.Annotations[AnnotationRefused]
	if !ok {
		return nil
	}
	reason := secret.Annotations[AnnotationRefusedReason]
	if reason == "" {
		reason = ReasonMalformed
	}
	return refuse([]Violation{{Reason: reason, Why: why}})
}
