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

package app

import (
	"context"
	"fmt"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/duration"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// getPolicy reads the named StagedBindingPolicy.
func getPolicy(ctx context.Context, c client.Client, name string) (*v1alpha1.StagedBindingPolicy, error) {
	p := &v1alpha1.StagedBindingPolicy{}
	if err := c.Get(ctx, types.NamespacedName{Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("no StagedBindingPolicy %q in this WDS", name)
		}
		return nil, fmt.Errorf("reading StagedBindingPolicy %s: %w", name, err)
	}
	return p, nil
}

// policy connects to the WDS the flags name and reads the named policy there.
func (o *options) policy(ctx context.Context, name string) (client.Client, *v1alpha1.StagedBindingPolicy, error) {
	c, err := o.client()
	if err != nil {
		return nil, nil, err
	}
	p, err := getPolicy(ctx, c, name)
	if err != nil {
		return nil, nil, err
	}
	return c, p, nil
}

// policyStage reads the named policy and returns it with the named stage
// (the active one when stageName is empty) and the client it was read with.
func (o *options) policyStage(ctx context.Context, name, stageName string) (client.Client, *v1alpha1.StagedBindingPolicy, *v1alpha1.Stage, error) {
	c, p, err := o.policy(ctx, name)
	if err != nil {
		return nil, nil, nil, err
	}
	stage, err := stageOrActive(p, stageName)
	if err != nil {
		return nil, nil, nil, err
	}
	return c, p, stage, nil
}

// stageObjects are the objects around one stage of a policy: its
// BindingPolicy and what KubeStellar made of it.
type stageObjects struct {
	bindingPolicy *ksv1alpha1.BindingPolicy // nil when there is none
	binding       *ksv1alpha1.Binding       // nil when there is none
	statuses      []ksv1alpha1.CombinedStatus
}

// readStage reads the objects around the named stage of a policy at the
// revision being rolled out, as the controller's snapshot does.
func readStage(ctx context.Context, c client.Client, policy *v1alpha1.StagedBindingPolicy, stage string) (stageObjects, error) {
	var objs stageObjects
	name := v1alpha1.StagePlacement(policy.Name, stage).At(policy.Status.UpdateRevision).String()
	if s := policy.Spec.StageNamed(stage); s != nil {
		name = v1alpha1.ActivePlacement(policy.Name, *s, policy.Status.UpdateRevision).String()
	}
	bp := &ksv1alpha1.BindingPolicy{}
	switch err := c.Get(ctx, types.NamespacedName{Name: name}, bp); {
	case err == nil:
		objs.bindingPolicy = bp
	case !apierrors.IsNotFound(err):
		return objs, fmt.Errorf("reading BindingPolicy %s: %w", name, err)
	}
	binding := &ksv1alpha1.Binding{}
	switch err := c.Get(ctx, types.NamespacedName{Name: name}, binding); {
	case err == nil:
		objs.binding = binding
	case !apierrors.IsNotFound(err):
		return objs, fmt.Errorf("reading Binding %s: %w", name, err)
	}
	statuses := &ksv1alpha1.CombinedStatusList{}
	if err := c.List(ctx, statuses, client.MatchingLabels{rollout.StatusLabelBindingPolicy: name}); err != nil {
		return objs, fmt.Errorf("listing the CombinedStatuses of %s: %w", name, err)
	}
	objs.statuses = statuses.Items
	return objs, nil
}

// clusters returns the destinations of a Binding, or nil.
func clusters(b *ksv1alpha1.Binding) []string {
	if b == nil {
		return nil
	}
	var out []string
	for _, d := range b.Spec.Destinations {
		out = append(out, d.ClusterId)
	}
	return out
}

// stageOrActive returns the stage named by --stage, or the active one.
func stageOrActive(p *v1alpha1.StagedBindingPolicy, name string) (*v1alpha1.Stage, error) {
	if name == "" {
		name = p.Status.ActiveStage
		if name == "" {
			name = p.Spec.Stages[0].Name
		}
	}
	stage := p.Spec.StageNamed(name)
	if stage == nil {
		return nil, fmt.Errorf("StagedBindingPolicy %s has no stage %q", p.Name, name)
	}
	return stage, nil
}

// age tells how long ago t was, as kubectl does.
func age(t time.Time, now time.Time) string {
	if t.IsZero() {
		return "<unknown>"
	}
	return duration.HumanDuration(now.Sub(t))
}
