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
	"fmt"
	"regexp"
	"time"

	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

func newApproveCommand(o *options) *cobra.Command {
	var stageName, digest string
	cmd := &cobra.Command{
		Use:   "approve NAME",
		Short: "Approve a stage that needs approval, in your own name",
		Long: `Approve a stage whose approval is Required: set the Approved condition of its
StageApproval, at the StageApproval's current generation, and status.approvedBy
to your user name (as the API server tells it). Without --stage, the stage that
awaits approval now. A stage the rollout has not reached can be approved ahead;
the approval counts for the policy's current spec and restartedAt only, which
the StageApproval's spec.specDigest names: with --spec-digest, only that digest
is approved (kubectl get sbpa -o wide shows it), and the approval is written only
if the StageApproval has not changed since it was read. Approving writes only
the StageApproval's status (the workload-stager-approver ClusterRole allows it).`,
		Example: `  # approve the stage web waits for
  kubectl stager approve web

  # approve prod ahead of time, for the spec you reviewed
  kubectl stager approve web --stage prod --spec-digest 3f1c0a9e52b8d7e4a6c2b1f0e9d8c7b6`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.approve(cmd.Context(), args[0], stageName, digest)
		},
	}
	cmd.Flags().StringVar(&stageName, "stage", "", "The stage to approve (default: the stage awaiting approval)")
	cmd.Flags().StringVar(&digest, "spec-digest", "", "The spec digest to approve, as the StageApproval's spec.specDigest says (default: the current one)")
	return cmd
}

// approve approves a stage of the named policy as the caller.
func (o *options) approve(ctx context.Context, name, stageName, digest string) error {
	c, p, err := o.policy(ctx, name)
	if err != nil {
		return err
	}
	if stageName == "" {
		record := p.Status.StageNamed(p.Status.ActiveStage)
		if record == nil || record.Phase != v1alpha1.StageAwaitingApproval {
			return fmt.Errorf("no stage of %s awaits approval now: name one with --stage", name)
		}
		stageName = record.Name
	}
	stage := p.Spec.StageNamed(stageName)
	if stage == nil {
		return fmt.Errorf("StagedBindingPolicy %s has no stage %q", name, stageName)
	}
	// A gate the rollout has reached binds even if its approval was set to
	// None since: its record names its StageApproval.
	if record := p.Status.StageNamed(stageName); stage.Approval != v1alpha1.ApprovalRequired && (record == nil || record.Approval == "") {
		return fmt.Errorf("stage %q of %s does not need approval", stageName, name)
	}
	user, err := whoAmI(ctx, c)
	if err != nil {
		return err
	}
	approval := &v1alpha1.StageApproval{}
	key := types.NamespacedName{Name: v1alpha1.StagePlacement(name, stageName).String()}
	if err := c.Get(ctx, key, approval); err != nil {
		if apierrors.IsNotFound(err) {
			return fmt.Errorf("StageApproval %s does not exist yet: the stager creates it once the rollout starts", key.Name)
		}
		return denied(err, user, "read StageApproval "+key.Name)
	}
	if digest != "" && approval.Spec.SpecDigest != digest {
		return fmt.Errorf("StageApproval %s is for spec digest %q, not %q: the policy changed since; look again and approve the current one",
			key.Name, approval.Spec.SpecDigest, digest)
	}
	approval.SetApproved(user, metav1.NewTime(o.now()))
	if err := c.Status().Update(ctx, approval); err != nil {
		if apierrors.IsConflict(err) {
			return fmt.Errorf("StageApproval %s changed while approving it (the policy may have changed): look again and approve again", key.Name)
		}
		return denied(err, user, "approve StageApproval "+key.Name)
	}
	fprintf(o.streams.Out, "stage %s of %s approved by %s (StageApproval %s, generation %d, spec digest %s)\n",
		stageName, name, user, key.Name, approval.Generation, approval.Spec.SpecDigest)
	return nil
}

// whoAmI asks the API server who the caller is.
func whoAmI(ctx context.Context, c client.Client) (string, error) {
	review := &authenticationv1.SelfSubjectReview{}
	if err := c.Create(ctx, review); err != nil {
		return "", fmt.Errorf("asking the API server who you are (SelfSubjectReview): %w", err)
	}
	return review.Status.UserInfo.Username, nil
}

// rbacRefusal is how the API server's authorizer words a refusal
// ("User \"pat\" cannot patch resource ..."); any other Forbidden is an
// admission's.
var rbacRefusal = regexp.MustCompile(`User ".*" cannot [a-z]+ resource`)

// denied says clearly when RBAC or an admission policy refuses the caller.
func denied(err error, user, what string) error {
	switch {
	case apierrors.IsForbidden(err) && !rbacRefusal.MatchString(err.Error()):
		// RBAC let the request through (an admission policy or webhook
		// refused it); a hint about RBAC would mislead.
		return fmt.Errorf("an admission policy refused to let %s %s: %w", user, what, err)
	case apierrors.IsForbidden(err):
		return fmt.Errorf("%s may not %s: %w (approvers need the workload-stager-approver ClusterRole; suspend, "+
			"resume, restart, abort and retry need to patch stagedbindingpolicies)", user, what, err)
	case apierrors.IsInvalid(err):
		return fmt.Errorf("the API server refused to %s: %w", what, err)
	}
	return fmt.Errorf("%s: %w", what, err)
}

func newSuspendCommand(o *options, suspend bool) *cobra.Command {
	verb, short, example := "suspend", "Hold a rollout where it is (spec.suspend)", "  kubectl stager suspend web"
	if !suspend {
		verb, short, example = "resume", "Let a suspended rollout go on", "  kubectl stager resume web"
	}
	return &cobra.Command{
		Use:   verb + " NAME",
		Short: short,
		Long: short + `. While suspended no stage starts and nothing placed
changes; resumed, the rollout goes on where it stopped, and the time suspended
does not count against the active stage's progressDeadline.`,
		Example:           example,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"suspend": suspend}})
			return o.patch(cmd.Context(), args[0], patch, verb)
		},
	}
}

func newAbortCommand(o *options, abort bool) *cobra.Command {
	verb, short, long, example := "abort", "Put the stages that moved back on the current revision (spec.abort)",
		`Put every stage that has moved to the revision being rolled out back on
status.currentRevision, the revision of the last completed rollout,
make-before-break, and hold the rollout there (phase Aborted) until it is
retried. A rollout without a previous revision is held where it is.`,
		"  kubectl stager abort web"
	if !abort {
		verb, short, long, example = "retry", "Roll an aborted revision out again from the first stage",
			`Clear spec.abort: the revision in spec.revision is rolled out again from
the first stage. To give up the aborted revision instead, set spec.revision
to another one (the current one, say) before retrying.`,
			"  kubectl stager retry web"
	}
	return &cobra.Command{
		Use:               verb + " NAME",
		Short:             short,
		Long:              short + ". " + long,
		Example:           example,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"abort": abort}})
			return o.patch(cmd.Context(), args[0], patch, verb)
		},
	}
}

func newRestartCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "restart NAME",
		Short: "Restart a rollout from its first stage",
		Long: `Restart a rollout from its first stage, make-before-break, by setting the
` + v1alpha1.RestartedAtAnnotation + ` annotation to the current time. Approvals
given for the rollout so far no longer count.`,
		Example:           "  kubectl stager restart web",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{"annotations": map[string]string{
				v1alpha1.RestartedAtAnnotation: o.now().UTC().Format(time.RFC3339)}}})
			return o.patch(cmd.Context(), args[0], patch, "restart")
		},
	}
}

// patch applies a merge patch to the named policy.
func (o *options) patch(ctx context.Context, name string, patch []byte, verb string) error {
	c, p, err := o.policy(ctx, name)
	if err != nil {
		return err
	}
	if err := c.Patch(ctx, p, client.RawPatch(types.MergePatchType, patch)); err != nil {
		user, whoErr := whoAmI(ctx, c)
		if whoErr != nil {
			user = "you"
		}
		return denied(err, user, verb+" StagedBindingPolicy "+name)
	}
	fprintf(o.streams.Out, "stagedbindingpolicy/%s: %s\n", name, map[string]string{
		"suspend": "suspended", "resume": "resumed", "restart": "restarted from its first stage",
		"abort": "aborted", "retry": "retried from its first stage"}[verb])
	return nil
}
