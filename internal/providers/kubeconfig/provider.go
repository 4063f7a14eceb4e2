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

// Package kubeconfig engages, as spaces, the kubeconfig Secrets that the
// guard of providers/kubeconfig (imported here as findkubeconfig) accepts:
// the multicluster-runtime Provider, the Clusters it and the KubeFlex
// provider engage spaces through, and the Auditor that reports refused
// Secrets with an Event, a log line and a metric. It links controller-runtime's
// manager; the kubectl plugin, which only finds spaces, does not link it.
package kubeconfig

import (
	"context"
	"errors"
	"fmt"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/cluster"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	mcmanager "sigs.k8s.io/multicluster-runtime/pkg/manager"
	"sigs.k8s.io/multicluster-runtime/pkg/multicluster"

	findkubeconfig "github.com/kubestellar/workload-stager/providers/kubeconfig"
)

// Options configure the Provider.
type Options struct {
	// Namespace holds the kubeconfig Secrets.
	Namespace string
	// Label (with value "true") marks a kubeconfig Secret.
	Label string
	// Key is the data key of the kubeconfig.
	Key string
	// Policy is what a kubeconfig may use.
	Policy findkubeconfig.Policy
	// ClusterOptions configure every space's cluster.
	ClusterOptions []cluster.Option
}

// OptionsOf returns the Provider's options as the flags say, with
// clusterOptions configuring every space's cluster.
func OptionsOf(f *findkubeconfig.Flags, clusterOptions ...cluster.Option) Options {
	return Options{Namespace: f.Namespace, Label: f.Label, Key: f.Key, Policy: f.Policy(), ClusterOptions: clusterOptions}
}

// Provider engages one space per labelled kubeconfig Secret, named after
// the Secret. It serves what multicluster-runtime's kubeconfig provider
// (v0.24.1, providers/kubeconfig) serves, which it replaces for two
// reasons: that provider parses a Secret's kubeconfig with client-go before
// its RESTOptions hook (reading files), and it removes a space before the
// cluster of a rotated kubeconfig has synced, so the space drops out at
// every rotation; this one engages through Clusters, make-before-break, and
// reads its Secrets from the hosting cache, which Screen guards.
type Provider struct {
	*Clusters
	opts   Options
	log    logr.Logger
	client client.Client
}

var _ multicluster.Provider = &Provider{}

// New returns a provider.
func New(opts Options, log logr.Logger) *Provider {
	return &Provider{Clusters: NewClusters(opts.Policy, opts.ClusterOptions), opts: opts, log: log}
}

// SetupWithManager watches the hosting cluster's kubeconfig Secrets; ctx
// bounds every space's cluster.
func (p *Provider) SetupWithManager(ctx context.Context, mgr mcmanager.Manager) error {
	local := mgr.GetLocalManager()
	if local == nil {
		return errors.New("kubeconfig provider: no local manager")
	}
	p.Start(ctx, mgr)
	p.client = local.GetClient()
	return ctrl.NewControllerManagedBy(local).
		For(&corev1.Secret{}, builder.WithPredicates(predicate.NewPredicateFuncs(func(obj client.Object) bool {
			return obj.GetNamespace() == p.opts.Namespace && obj.GetLabels()[p.opts.Label] == "true"
		}))).
		Named("kubeconfig-provider").
		Complete(p)
}

// Reconcile engages, replaces or disengages the space of one Secret. A
// refused Secret is reported by the Auditor; here it is only not a space.
func (p *Provider) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := p.log.WithValues("secret", req.String(), "cluster", req.Name)
	secret := &corev1.Secret{}
	if err := p.client.Get(ctx, req.NamespacedName, secret); err != nil {
		if apierrors.IsNotFound(err) {
			p.Disengage(req.Name, log)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", req.NamespacedName, err)
	}
	raw := secret.Data[p.opts.Key]
	if secret.DeletionTimestamp != nil || secret.Labels[p.opts.Label] != "true" || len(raw) == 0 || findkubeconfig.Screened(secret) != nil {
		p.Disengage(req.Name, log)
		return ctrl.Result{}, nil
	}
	if err := p.Engage(req.Name, raw, log); err != nil {
		var refused *findkubeconfig.RefusedError
		var shared *SharedError
		if errors.As(err, &refused) || errors.As(err, &shared) {
			log.Error(err, "Kubeconfig Secret is not a space")
			p.Disengage(req.Name, log)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	return ctrl.Result{}, nil
}
