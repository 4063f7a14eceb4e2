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

package dashboard

import (
	"context"
	"fmt"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Source is where the dashboard reads rollouts from: the spaces, their
// StagedBindingPolicies and Events, and a watch of each space's policies.
type Source interface {
	// Spaces returns the names of the spaces, sorted.
	Spaces() []string
	// List returns the policies of a space.
	List(ctx context.Context, space string) ([]v1alpha1.StagedBindingPolicy, error)
	// Get returns one policy of a space; an error satisfying
	// apierrors.IsNotFound when there is none.
	Get(ctx context.Context, space, name string) (*v1alpha1.StagedBindingPolicy, error)
	// Events returns the Events about one policy of a space.
	Events(ctx context.Context, space, name string) ([]corev1.Event, error)
	// Watch calls changed with the name of every policy of the space that
	// is added, changed or deleted, until ctx is done or the watch fails.
	Watch(ctx context.Context, space string, changed func(name string)) error
}

// ClientSource is a Source reading each space through a client of its own.
type ClientSource map[string]client.WithWatch

var _ Source = ClientSource(nil)

// Spaces implements Source.
func (s ClientSource) Spaces() []string {
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func (s ClientSource) client(space string) (client.WithWatch, error) {
	c, ok := s[space]
	if !ok {
		return nil, fmt.Errorf("no space %q", space)
	}
	return c, nil
}

// List implements Source.
func (s ClientSource) List(ctx context.Context, space string) ([]v1alpha1.StagedBindingPolicy, error) {
	c, err := s.client(space)
	if err != nil {
		return nil, err
	}
	list := &v1alpha1.StagedBindingPolicyList{}
	if err := c.List(ctx, list, client.Limit(maxPoliciesPerSpace)); err != nil {
		return nil, fmt.Errorf("listing StagedBindingPolicies: %w", err)
	}
	return list.Items, nil
}

// Get implements Source.
func (s ClientSource) Get(ctx context.Context, space, name string) (*v1alpha1.StagedBindingPolicy, error) {
	c, err := s.client(space)
	if err != nil {
		return nil, err
	}
	p := &v1alpha1.StagedBindingPolicy{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		return nil, fmt.Errorf("reading StagedBindingPolicy %s: %w", name, err)
	}
	return p, nil
}

// Events implements Source: the Events whose involved object is the policy,
// in every namespace, selected by the API server.
func (s ClientSource) Events(ctx context.Context, space, name string) ([]corev1.Event, error) {
	c, err := s.client(space)
	if err != nil {
		return nil, err
	}
	list := &corev1.EventList{}
	selector := fields.Set{"involvedObject.kind": "StagedBindingPolicy", "involvedObject.name": name}.AsSelector()
	if err := c.List(ctx, list, client.MatchingFieldsSelector{Selector: selector}, client.Limit(maxEvents)); err != nil {
		return nil, fmt.Errorf("listing the Events of %s: %w", name, err)
	}
	return list.Items, nil
}

// Watch implements Source: it lists the space's policies once, then
// watches from that list's resourceVersion, resuming each watch the API
// server ends from the last version seen, so that nothing is replayed; only
// when that version has expired does it list again and report every policy
// listed, as a change may have been missed.
func (s ClientSource) Watch(ctx context.Context, space string, changed func(name string)) error {
	c, err := s.client(space)
	if err != nil {
		return err
	}
	version, relisted := "", false
	for ctx.Err() == nil {
		if version == "" {
			list := &v1alpha1.StagedBindingPolicyList{}
			if err := c.List(ctx, list); err != nil {
				return fmt.Errorf("listing StagedBindingPolicies: %w", err)
			}
			version = list.ResourceVersion
			if relisted {
				for _, p := range list.Items {
					changed(p.Name)
				}
			}
			relisted = true
		}
		w, err := c.Watch(ctx, &v1alpha1.StagedBindingPolicyList{},
			&client.ListOptions{Raw: &metav1.ListOptions{ResourceVersion: version, AllowWatchBookmarks: true}})
		switch {
		case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
			version = ""
			continue
		case err != nil:
			return fmt.Errorf("watching StagedBindingPolicies: %w", err)
		}
		version = drain(w, version, changed)
		select {
		case <-ctx.Done():
		case <-time.After(time.Second):
		}
	}
	return nil
}

// drain passes the name of every policy the watch reports a change of to
// changed, until the watch ends, and returns the last resourceVersion seen
// ("" when the watch reports that the version it started from expired).
func drain(w watch.Interface, version string, changed func(string)) string {
	defer w.Stop()
	for e := range w.ResultChan() {
		if e.Type == watch.Error {
			if err := apierrors.FromObject(e.Object); apierrors.IsResourceExpired(err) || apierrors.IsGone(err) {
				return ""
			}
			return version
		}
		p, ok := e.Object.(*v1alpha1.StagedBindingPolicy)
		if !ok {
			continue
		}
		version = p.ResourceVersion
		if e.Type != watch.Bookmark {
			changed(p.Name)
		}
	}
	return version
}
