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
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// maxPromotionReason is the most bytes of a promotion's reason (the CRD's bound).
const maxPromotionReason = 256

func newPromoteCommand(o *options) *cobra.Command {
	var stageName, reason string
	var full, approve bool
	cmd := &cobra.Command{
		Use:   "promote NAME [--stage S | --full] --reason TEXT [--approve]",
		Short: "Break glass: treat the active stage (or every stage left) as done",
		Long: `Promote the active stage past its gates: the stager treats it as done without
its condition, soak, analyses or batches, and moves on. With --full every stage
left is promoted as it becomes active, until the rollout completes or another
revision starts. The request is spec.promotion, in your own name (as the API
server tells it) and with your reason; the stage's record then says who, when,
why and which gates were skipped, and a Warning Event Promoted says so.

An approval gate is never skipped: a stage that needs approval waits for it.
With --approve you also approve, in your own name, the active stage if it
awaits approval (and with --full every later stage that needs one), which needs
the workload-stager-approver ClusterRole besides the
workload-stager-promoter one that promoting needs.`,
		Example: `  # promote the active stage of web
  kubectl stager promote web --reason "metrics backend down; checked by hand"

  # promote every stage left, approving the gates as you go
  kubectl stager promote web --full --approve --reason "hotfix for INC-1234"`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.promote(cmd.Context(), args[0], stageName, reason, full, approve)
		},
	}
	cmd.Flags().StringVar(&stageName, "stage", "", "The stage to promote; it must be the active one (default: the active stage)")
	cmd.Flags().BoolVar(&full, "full", false, "Promote every stage left, each as it becomes active")
	cmd.Flags().StringVar(&reason, "reason", "", "Why the gates are skipped (required, at most 256 bytes)")
	cmd.Flags().BoolVar(&approve, "approve", false, "Also approve, in your name, the stages to promote that need approval")
	cmd.MarkFlagsMutuallyExclusive("stage", "full")
	return cmd
}

// promote writes spec.promotion of the named policy as the caller, having
// approved the stages asked for first.
func (o *options) promote(ctx context.Context, name, stageName, reason string, full, approve bool) error {
	switch {
	case reason == "":
		return errors.New("--reason is required: say why the gates are skipped")
	case len(reason) > maxPromotionReason:
		return fmt.Errorf("--reason is %d bytes, more than the %d a promotion records", len(reason), maxPromotionReason)
	}
	c, p, err := o.policy(ctx, name)
	if err != nil {
		return err
	}
	active := p.Status.StageNamed(p.Status.ActiveStage)
	switch {
	case p.Spec.Abort:
		return fmt.Errorf("the rollout of %s is aborted (spec.abort): there is no stage to promote", name)
	case active == nil:
		return fmt.Errorf("the rollout of %s has not started: there is no active stage to promote", name)
	case p.Status.Phase == v1alpha1.RolloutCompleted:
		return fmt.Errorf("the rollout of %s is complete: there is no stage to promote", name)
	case stageName != "" && p.Spec.StageNamed(stageName) == nil:
		return fmt.Errorf("StagedBindingPolicy %s has no stage %q", name, stageName)
	case stageName != "" && stageName != active.Name:
		return fmt.Errorf("stage %q of %s is not the active stage (%q is): the stager would ignore the promotion; "+
			"promote the active stage, or wait until the rollout reaches %q", stageName, name, active.Name, stageName)
	}
	user, err := whoAmI(ctx, c)
	if err != nil {
		return err
	}
	if approve {
		if err := o.approveForPromotion(ctx, c, p, full); err != nil {
			return err
		}
	} else if active.Phase == v1alpha1.StageAwaitingApproval {
		fprintf(o.streams.Out, "stage %s of %s awaits approval: the promotion waits for it (approve it, or promote with --approve)\n",
			active.Name, name)
	}
	promotion := &v1alpha1.Promotion{Full: full, Reason: reason, RequestedBy: user, RequestedAt: requestTime(p, o.now()),
		Revision: p.Status.UpdateRevision}
	if !full {
		promotion.Stage = active.Name
	}
	patch, err := promotionPatch(promotion)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		return promotionDenied(err, user, name)
	}
	what := fmt.Sprintf("stage %s", active.Name)
	if full {
		what = fmt.Sprintf("every stage from %s on", active.Name)
	}
	fprintf(o.streams.Out, "stagedbindingpolicy/%s: promotion of %s requested by %s: %s\n", name, what, user, reason)
	fprintf(o.streams.Out, "the stager records it in status.stages[].promotion, with the gates it skipped (kubectl stager get %s)\n", name)
	return nil
}

// approveForPromotion approves, as the caller, the active stage if it
// awaits approval, and with full every later stage that needs approval
// and whose StageApproval the stager has made.
func (o *options) approveForPromotion(ctx context.Context, c client.Client, p *v1alpha1.StagedBindingPolicy, full bool) error {
	start := -1
	for i, s := range p.Spec.Stages {
		if s.Name == p.Status.ActiveStage {
			start = i
		}
	}
	for i := start; i >= 0 && i < len(p.Spec.Stages); i++ {
		stage := p.Spec.Stages[i]
		record := p.Status.StageNamed(stage.Name)
		switch {
		case i == start && (record == nil || record.Phase != v1alpha1.StageAwaitingApproval):
			// The active stage has passed its gate, or has none.
		case i > start && stage.Approval != v1alpha1.ApprovalRequired:
		default:
			approval := &v1alpha1.StageApproval{}
			key := types.NamespacedName{Name: v1alpha1.StagePlacement(p.Name, stage.Name).String()}
			err := c.Get(ctx, key, approval)
			switch {
			case apierrors.IsNotFound(err):
				fprintf(o.streams.Out, "stage %s of %s: no StageApproval yet; approve it when the rollout reaches it\n", stage.Name, p.Name)
			case err == nil && approval.Approved() != nil:
				// Approved already, for this rollout.
			default:
				if err := o.approve(ctx, p.Name, stage.Name, ""); err != nil {
					return err
				}
			}
		}
		if !full {
			break
		}
	}
	return nil
}

// promotionPatch is the merge patch that replaces spec.promotion with
// promotion: the fields it leaves out are taken away, not kept from an
// earlier request.
func promotionPatch(promotion *v1alpha1.Promotion) ([]byte, error) {
	raw, err := json.Marshal(promotion)
	if err != nil {
		return nil, fmt.Errorf("writing the promotion: %w", err)
	}
	fields := map[string]any{}
	if err := json.Unmarshal(raw, &fields); err != nil {
		return nil, fmt.Errorf("writing the promotion: %w", err)
	}
	for _, key := range []string{"stage", "full", "revision"} {
		if _, ok := fields[key]; !ok {
			fields[key] = nil
		}
	}
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"promotion": fields}})
	if err != nil {
		return nil, fmt.Errorf("writing the promotion: %w", err)
	}
	return patch, nil
}

// promotionDenied says clearly when RBAC or the promotion's admission
// policy refuses the caller.
func promotionDenied(err error, user, name string) error {
	switch {
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s may not promote StagedBindingPolicy %s: %w (promoters need the workload-stager-promoter ClusterRole, "+
			"which grants the verb promote)", user, name, err)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("the API server refused the promotion of StagedBindingPolicy %s: %w", name, err)
	}
	return fmt.Errorf("promote StagedBindingPolicy %s: %w", name, err)
}

// printPromotion prints, for explain, who promoted the stage of record
// past its gates, when, why and which gates it skipped.
func printPromotion(w io.Writer, record *v1alpha1.StageStatus, now time.Time) {
	if record == nil || record.Promotion == nil {
		return
	}
	pr := record.Promotion
	skipped := "none"
	if len(pr.Skipped) > 0 {
		skipped = strings.Join(pr.Skipped, ", ")
	}
	how := "promoted"
	if pr.Full {
		how = "promoted (full)"
	}
	fprintf(w, "Promoted:\t%s by %s %s ago: %s; skipped: %s\n", how, pr.By, age(pr.Time.Time, now), pr.Reason, skipped)
}

// requestTime is the requestedAt of a new promotion request: now, to the
// second as the API keeps it, or a second after the latest request the
// policy holds or took, since the stager ignores a request no later than
// the last one taken.
func requestTime(p *v1alpha1.StagedBindingPolicy, now time.Time) metav1.Time {
	at := now.Truncate(time.Second)
	for _, earlier := range []*metav1.Time{lastRequestedAt(p), specRequestedAt(p)} {
		if earlier != nil && !at.After(earlier.Time) {
			at = earlier.Add(time.Second).Truncate(time.Second)
		}
	}
	return metav1.NewTime(at)
}

func lastRequestedAt(p *v1alpha1.StagedBindingPolicy) *metav1.Time {
	if p.Status.LastPromotion == nil {
		return nil
	}
	return &p.Status.LastPromotion.RequestedAt
}

func specRequestedAt(p *v1alpha1.StagedBindingPolicy) *metav1.Time {
	if p.Spec.Promotion == nil {
		return nil
	}
	return &p.Spec.Promotion.RequestedAt
}
