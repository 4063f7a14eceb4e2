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
	"context"
	"fmt"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	findkubeconfig "github.com/kubestellar/workload-stager/providers/kubeconfig"
)

// Event reasons on kubeconfig Secrets.
const (
	// EventReasonRefused is the reason of the Warning Event on a refused Secret.
	EventReasonRefused = "KubeconfigRefused"
	// EventReasonAccepted is the reason of the Normal Event on a Secret
	// accepted after having been refused.
	EventReasonAccepted = "KubeconfigAccepted"
	// eventAction is the action of the Events.
	eventAction = "Check"
)

// maxEventNote bounds an Event's note (the API server takes at most 1 KiB).
const maxEventNote = 1000

// Auditor checks every kubeconfig Secret the provider may engage against a
// Policy and reports each refused one: a Warning Event on the Secret naming the
// offending fields, an error log line and the stager_kubeconfig_secret_refused
// metric. It does not engage or
// refuse anything itself: the provider's RESTOption does.
type Auditor struct {
	// Client reads the Secrets.
	Client client.Client
	// Recorder emits the Events.
	Recorder events.EventRecorder
	// Policy is what is allowed.
	Policy findkubeconfig.Policy
	// Namespace and Label select the Secrets, as the provider's options do.
	Namespace, Label string
	// Key is the data key of the kubeconfig.
	Key string

	refused map[string]bool
}

// SetupWithManager registers the Auditor with the hosting cluster's manager.
func (a *Auditor) SetupWithManager(mgr manager.Manager) error {
	a.refused = map[string]bool{}
	return ctrl.NewControllerManagedBy(mgr).
		Named("kubeconfig-auditor").
		For(&corev1.Secret{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			return obj.GetNamespace() == a.Namespace && obj.GetLabels()[a.Label] == "true"
		}))).
		Complete(a)
}

// Reconcile checks one Secret.
func (a *Auditor) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	logger := log.FromContext(ctx).WithValues("secret", req.String())
	secret := &corev1.Secret{}
	err := a.Client.Get(ctx, req.NamespacedName, secret)
	if apierrors.IsNotFound(err) || (err == nil && (secret.DeletionTimestamp != nil || secret.Labels[a.Label] != "true")) {
		a.accepted(req.Name)
		return ctrl.Result{}, nil
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", req.NamespacedName, err)
	}

	verdict := findkubeconfig.Screened(secret)
	raw, ok := secret.Data[a.Key]
	switch {
	case verdict != nil:
	case !ok:
		verdict = &findkubeconfig.RefusedError{Violations: []findkubeconfig.Violation{{Reason: findkubeconfig.ReasonMissingKey, Field: "data[" + a.Key + "]", Why: "the Secret has no kubeconfig under this key"}}}
	default:
		verdict = a.Policy.Check(raw)
	}
	if verdict == nil {
		if a.refused[req.Name] {
			a.Recorder.Eventf(secret, nil, corev1.EventTypeNormal, EventReasonAccepted, eventAction, "The kubeconfig is accepted: the space %q is engaged", secret.Name)
			logger.Info("Kubeconfig Secret accepted")
		}
		a.accepted(req.Name)
		return ctrl.Result{}, nil
	}

	reason := findkubeconfig.ReasonOf(verdict)
	logger.Error(verdict, "Kubeconfig Secret refused: it does not become a space", "reason", reason)
	a.Recorder.Eventf(secret, nil, corev1.EventTypeWarning, EventReasonRefused, eventAction, "%s", EventNote(verdict.Error()))
	a.refused[req.Name] = true
	refusedSecrets.Refused(req.Name, reason)
	return ctrl.Result{}, nil
}

// accepted forgets a refusal.
func (a *Auditor) accepted(secret string) {
	delete(a.refused, secret)
	refusedSecrets.Accepted(secret)
}

// EventNote cuts a note to what an Event may hold (the API server takes at
// most 1 KiB), marking the cut, for every provider that reports on the
// objects it reads kubeconfigs from.
func EventNote(note string) string {
	return truncate(note, maxEventNote)
}

// truncate cuts s to at most n bytes, marking the cut.
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "… (cut)"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}
