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

// Package kubeflex engages, as spaces, the KubeFlex ControlPlanes that
// providers/kubeflex (imported here as findkubeflex) decides are spaces:
// the multicluster-runtime Provider, which runs as a controller of the
// hosting cluster's manager, engages them through the Clusters of
// internal/providers/kubeconfig, and reports those it cannot use (an Event
// on the ControlPlane, a log line and stager_kubeflex_controlplane_unusable).
package kubeflex

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	"github.com/kubestellar/workload-stager/internal/providers/kubeconfig"
	findkubeconfig "github.com/kubestellar/workload-stager/providers/kubeconfig"
	findkubeflex "github.com/kubestellar/workload-stager/providers/kubeflex"
)

// EventReasonUnusable is the reason of the Warning Event on a ControlPlane
// that is selected but cannot be a space.
const EventReasonUnusable = "ControlPlaneUnusable"

// Options configure the provider: the flags' (findkubeflex.Options), and
// the configuration of every space's cluster.
type Options struct {
	findkubeflex.Options
	// ClusterOptions configure every space's cluster.
	ClusterOptions []cluster.Option
}

// Provider engages the selected, Ready KubeFlex ControlPlanes of the hosting
// cluster as spaces. It runs as a controller of the hosting cluster's
// manager.
type Provider struct {
	opts Options
	log  logr.Logger

	client   client.Client
	reader   client.Reader
	recorder events.EventRecorder

	// Clusters serves the engaged ControlPlanes' spaces.
	*kubeconfig.Clusters

	mu sync.Mutex
	// unusable is the reason reported for each unusable ControlPlane.
	unusable map[string]string
}

var _ multicluster.Provider = &Provider{}

// New returns a provider.
func New(opts Options, log logr.Logger) *Provider {
	if opts.Resync <= 0 {
		opts.Resync = findkubeflex.DefaultResync
	}
	return &Provider{opts: opts, log: log, Clusters: kubeconfig.NewClusters(opts.Policy, opts.ClusterOptions), unusable: map[string]string{}}
}

// SetupWithManager watches the hosting cluster's ControlPlanes; ctx bounds
// every space's cluster.
func (p *Provider) SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error {
	if p.opts.Selector == nil {
		return errors.New("kubeflex provider: no selector")
	}
	local := mgr.GetLocalManager()
	p.Start(ctx, mgr)
	p.client, p.reader = local.GetClient(), local.GetAPIReader()
	p.recorder = local.GetEventRecorder("workload-stager")
	cp := &unstructured.Unstructured{}
	cp.SetGroupVersionKind(findkubeflex.ControlPlaneGVK)
	return ctrl.NewControllerManagedBy(local).For(cp).Named("kubeflex-provider").Complete(p)
}

// Reconcile engages, replaces or disengages the space of one ControlPlane.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	name := req.Name
	log := p.log.WithValues("controlPlane", name)
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(findkubeflex.ControlPlaneGVK)
	if err := p.client.Get(ctx, req.NamespacedName, u); err != nil {
		if apierrors.IsNotFound(err) {
			p.Disengage(name, log)
			p.forget(name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading ControlPlane %s: %w", name, err)
	}
	d, err := p.opts.Decide(u)
	if err != nil {
		p.Disengage(name, log)
		p.report(u, findkubeconfig.ReasonMalformed, err.Error(), log)
		return ctrl.Result{}, nil
	}
	if d.Ignore {
		p.Disengage(name, log)
		p.forget(name)
		return ctrl.Result{}, nil
	}
	if d.Reason != "" {
		p.Disengage(name, log)
		p.report(u, d.Reason, d.Message, log)
		return ctrl.Result{}, nil
	}
	raw, reason, message := p.kubeconfigOf(ctx, d)
	if reason != "" {
		p.Disengage(name, log)
		p.report(u, reason, message, log)
		return ctrl.Result{RequeueAfter: p.opts.Resync}, nil
	}
	if err := p.Engage(name, raw, log); err != nil {
		var refused *findkubeconfig.RefusedError
		var shared *kubeconfig.SharedError
		switch {
		case errors.As(err, &refused):
			p.Disengage(name, log)
			p.report(u, refused.Reason(), refused.Error(), log)
			return ctrl.Result{RequeueAfter: p.opts.Resync}, nil
		case errors.As(err, &shared):
			p.Disengage(name, log)
			p.report(u, findkubeflex.ReasonSharedKubeconfig, err.Error(), log)
			return ctrl.Result{RequeueAfter: p.opts.Resync}, nil
		}
		return ctrl.Result{}, err
	}
	p.forget(name)
	return ctrl.Result{RequeueAfter: p.opts.Resync}, nil
}

// kubeconfigOf reads the kubeconfig a decision names, uncached.
func (p *Provider) kubeconfigOf(ctx context.Context, d findkubeflex.Decision) (raw []byte, reason, message string) {
	return findkubeflex.ReadKubeconfig(ctx, p.reader, d)
}

// report reports a selected ControlPlane that cannot be a space: a log line
// with message and the metric every time, an Event when the reason
// changes, whose note is unusableNote's.
func (p *Provider) report(cp *unstructured.Unstructured, reason, message string, log logr.Logger) {
	name := cp.GetName()
	unusableControlPlanes.Refused(name, reason)
	p.mu.Lock()
	changed := p.unusable[name] != reason
	p.unusable[name] = reason
	p.mu.Unlock()
	log.Error(errors.New(message), "ControlPlane cannot be a space", "reason", reason)
	if changed {
		p.recorder.Eventf(cp, nil, corev1.EventTypeWarning, EventReasonUnusable, "Engage", "%s", unusableNote(reason))
	}
}

// unusableNote is what the ControlPlaneUnusable Event says of a report
// with reason: the reason in words, nothing of the report's message. A
// ControlPlane is cluster-scoped, so its Events go to the namespace
// "default", which more people read than the Secrets it names and the
// stager's log (which has message whole): a note names no Secret,
// namespace, key, server, file or command, and does not tell a missing
// Secret from one without the key.
func unusableNote(reason string) string {
	switch reason {
	case findkubeflex.ReasonNotReady:
		return "the ControlPlane's Ready condition is not True"
	case findkubeflex.ReasonNoSecretRef:
		return "the ControlPlane's status.secretRef does not name a Secret and a key"
	case findkubeflex.ReasonSecretNotAllowed:
		return "the ControlPlane's Secret is in a namespace that --kubeflex-secret-namespaces does not list"
	case findkubeflex.ReasonSecretUnreadable, findkubeflex.ReasonNoKubeconfig:
		return "no kubeconfig can be read where the ControlPlane's status.secretRef points; the stager's log says why"
	case findkubeflex.ReasonSharedKubeconfig:
		return "another ControlPlane, engaged first, serves the same kubeconfig: one WDS is served once"
	}
	return "the ControlPlane's kubeconfig is refused or malformed (" + reason + "); the stager's log names the fields"
}

// forget clears a ControlPlane's report.
func (p *Provider) forget(name string) {
	unusableControlPlanes.Accepted(name)
	p.mu.Lock()
	delete(p.unusable, name)
	p.mu.Unlock()
}
