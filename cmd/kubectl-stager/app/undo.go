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
	"errors"
	"fmt"
	"slices"
	"strings"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"github.com/spf13/cobra"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// Bounds on what undo reads to find a revision's objects: a downsync that
// selects every resource of a large WDS stays a few hundred requests.
const (
	// undoMaxResources is the most resources undo lists.
	undoMaxResources = 200
	// undoPageSize and undoMaxPages bound the objects undo reads per
	// resource and selector.
	undoPageSize = 100
	undoMaxPages = 5
)

func newUndoCommand(o *options) *cobra.Command {
	var to string
	cmd := &cobra.Command{
		Use:   "undo NAME",
		Short: "Roll the previous completed revision out again (spec.revision)",
		Long: `Point spec.revision back at the newest revision that completed, as
status.history records it, other than the one being rolled out (or at the
revision --to-revision names, which must be recorded as Completed or
Promoted). The stager then rolls it out stage by stage like any revision,
approvals and all. Undo is refused when no object of that revision (labelled
with spec.revision.labelKey) that the policy's downsync selects exists in the
WDS any more: the rollout would place nothing. An aborted policy (spec.abort)
is undone too: undo clears spec.abort in the same write, since the abort would
otherwise keep the revision from starting. The write fails, and changes
nothing, if the policy changed since it was read.`,
		Example: `  # go back to the revision before the one rolled out
  kubectl stager undo web

  # go back to v1
  kubectl stager undo web --to-revision v1`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			return o.undo(cmd.Context(), args[0], to)
		},
	}
	cmd.Flags().StringVar(&to, "to-revision", "", "The revision to roll out again; it must be Completed in the policy's history (default: the newest Completed other than the one being rolled out)")
	return cmd
}

// undo points the named policy's spec.revision back at a completed revision.
func (o *options) undo(ctx context.Context, name, to string) error {
	config, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return fmt.Errorf("reading the kubeconfig: %w", err)
	}
	c, err := clientFor(config)
	if err != nil {
		return err
	}
	p, err := getPolicy(ctx, c, name)
	if err != nil {
		return err
	}
	target, err := undoTarget(p, to)
	if err != nil {
		return err
	}
	found, err := revisionObject(ctx, config, p, target)
	if err != nil {
		return err
	}
	from := p.Spec.Revision.Name
	if err := patchUndo(ctx, c, p, target, to); err != nil {
		if apierrors.IsConflict(err) || errors.Is(err, errChangedWhileUndoing) {
			return fmt.Errorf("StagedBindingPolicy %s changed while undoing it: look again (kubectl stager history %s) and undo again", name, name)
		}
		user, whoErr := whoAmI(ctx, c)
		if whoErr != nil {
			user = "you"
		}
		return denied(err, user, "undo StagedBindingPolicy "+name)
	}
	fprintf(o.streams.Out, "stagedbindingpolicy/%s: spec.revision %s -> %s (%s exists); the stager rolls it out from stage %s\n",
		name, from, target, found, p.Spec.Stages[0].Name)
	if p.Spec.Abort {
		fprintf(o.streams.Out, "stagedbindingpolicy/%s: spec.abort cleared\n", name)
	}
	return nil
}

// errChangedWhileUndoing: the policy's spec, or the revision undo would
// pick, changed between undo's read and its write.
var errChangedWhileUndoing = errors.New("changed while undoing it")

// patchUndo points p's spec.revision at target (and clears spec.abort),
// locked on p's resourceVersion. The stager writes the status often, and a
// status write changes the resourceVersion too: when only the status
// changed (same generation) and undo would still pick target, it writes
// again on the fresh object, as client-go's retry.RetryOnConflict allows;
// any other change is errChangedWhileUndoing.
func patchUndo(ctx context.Context, c client.Client, p *v1alpha1.StagedBindingPolicy, target, to string) error {
	first := true
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			fresh, err := getPolicy(ctx, c, p.Name)
			if err != nil {
				return err
			}
			if again, err := undoTarget(fresh, to); fresh.Generation != p.Generation || err != nil || again != target {
				return errChangedWhileUndoing
			}
			p = fresh
		}
		first = false
		updated := p.DeepCopy()
		updated.Spec.Revision.Name = target
		updated.Spec.Abort = false
		return c.Patch(ctx, updated, client.MergeFromWithOptions(p, client.MergeFromWithOptimisticLock{}))
	})
}

// undoTarget is the revision undo rolls out: to, which must be Completed
// (or Promoted) in the policy's history, or the newest such revision
// other than the one being rolled out.
func undoTarget(p *v1alpha1.StagedBindingPolicy, to string) (string, error) {
	if p.Spec.Revision == nil {
		return "", fmt.Errorf("StagedBindingPolicy %s has no spec.revision: it rolls out its whole downsync, and has no earlier revision to go back to", p.Name)
	}
	var completed []string
	for _, h := range p.Status.History {
		if (h.Outcome == v1alpha1.OutcomeCompleted || h.Outcome == v1alpha1.OutcomePromoted) && !slices.Contains(completed, h.Revision) {
			completed = append(completed, h.Revision)
		}
	}
	spec := p.Spec.Revision.Name
	if to == "" {
		last := v1alpha1.LastCompleted(p.Status.History, p.Status.UpdateRevision, spec)
		if last == nil {
			return "", fmt.Errorf("StagedBindingPolicy %s has no completed revision other than %q in its history (completed: %s): name one with --to-revision",
				p.Name, spec, orNone(strings.Join(completed, ", ")))
		}
		to = last.Revision
	}
	switch {
	case to == v1alpha1.Unrevisioned:
		return "", fmt.Errorf("revision %q is the placement from before spec.revision: remove spec.revision to roll it out again", to)
	case to == spec:
		return "", fmt.Errorf("spec.revision of %s names %q already", p.Name, to)
	case !slices.Contains(completed, to):
		return "", fmt.Errorf("revision %q is not Completed in the history of %s (completed: %s): undo goes back only to a revision that completed; "+
			"to roll out another, set spec.revision", to, p.Name, orNone(strings.Join(completed, ", ")))
	}
	return to, nil
}

// revisionObject finds an object of the revision that the policy's
// downsync selects: for each clause, the resources it names (every
// listable one for "*" or none), listed with each of its object selectors
// and the revision's label, filtered by its namespaces, namespace
// selectors and object names. It returns "<kind> <namespace>/<name>" of
// the first one found, or an error saying what it looked for.
func revisionObject(ctx context.Context, config *rest.Config, p *v1alpha1.StagedBindingPolicy, revision string) (string, error) {
	// Listing every resource draws the API server's deprecation warnings,
	// which say nothing of the revision.
	config = rest.CopyConfig(config)
	config.WarningHandler = rest.NoWarnings{}
	disco, err := discovery.NewDiscoveryClientForConfig(config)
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", config.Host, err)
	}
	// Metadata only: undo needs to know an object exists, not its
	// content (a Secret's data, say).
	meta, err := metadata.NewForConfig(config)
	if err != nil {
		return "", fmt.Errorf("connecting to %s: %w", config.Host, err)
	}
	lists, err := disco.ServerPreferredResources()
	if err != nil && len(lists) == 0 {
		return "", fmt.Errorf("discovering the WDS's resources: %w", err)
	}
	key := p.Spec.Revision.RevisionLabelKey()
	searched := make([]string, 0, len(p.Spec.Downsync))
	nsLabels := map[string]labels.Set{}
	for _, clause := range p.Spec.Downsync {
		resources := matchingResources(lists, clause.DownsyncObjectTest)
		if len(resources) > undoMaxResources {
			resources = resources[:undoMaxResources]
		}
		selectors := clause.ObjectSelectors
		if len(selectors) == 0 {
			selectors = []metav1.LabelSelector{{}}
		}
		searched = append(searched, describeClause(clause.DownsyncObjectTest))
		for _, r := range resources {
			for _, s := range selectors {
				s = *s.DeepCopy()
				s.MatchExpressions = append(s.MatchExpressions, metav1.LabelSelectorRequirement{Key: key, Operator: metav1.LabelSelectorOpIn, Values: []string{revision}})
				selector, err := metav1.LabelSelectorAsSelector(&s)
				if err != nil {
					return "", fmt.Errorf("spec.downsync of %s has an invalid object selector: %w", p.Name, err)
				}
				found, err := findSelected(ctx, meta, r, selector.String(), clause.DownsyncObjectTest, nsLabels)
				if err != nil {
					return "", err
				}
				if found != "" {
					return found, nil
				}
			}
		}
	}
	return "", fmt.Errorf("no object of revision %q is left in the WDS: none labelled %s=%s among what spec.downsync of %s selects (%s); "+
		"undo would place nothing: create revision %q's objects again, or undo to another revision",
		revision, key, revision, p.Name, orNone(strings.Join(searched, "; ")), revision)
}

// describeClause says which resources a downsync clause selects.
func describeClause(test ksv1alpha1.DownsyncObjectTest) string {
	what := "every resource"
	if len(test.Resources) > 0 && !slices.Contains(test.Resources, "*") {
		what = strings.Join(test.Resources, ", ")
	}
	switch {
	case test.APIGroup == nil:
	case *test.APIGroup == "":
		what += " of the core group"
	default:
		what += " of group " + *test.APIGroup
	}
	return what
}

// resource is a listable resource of the WDS.
type resource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
}

// matchingResources are the listable resources a clause's apiGroup and
// resources name, in discovery's order.
func matchingResources(lists []*metav1.APIResourceList, test ksv1alpha1.DownsyncObjectTest) []resource {
	var out []resource
	for _, list := range lists {
		gv, err := schema.ParseGroupVersion(list.GroupVersion)
		if err != nil || test.APIGroup != nil && *test.APIGroup != gv.Group {
			continue
		}
		for _, r := range list.APIResources {
			if strings.Contains(r.Name, "/") || !slices.Contains(r.Verbs, "list") ||
				len(test.Resources) > 0 && !slices.Contains(test.Resources, "*") && !slices.Contains(test.Resources, r.Name) {
				continue
			}
			out = append(out, resource{gvr: gv.WithResource(r.Name), kind: r.Kind, namespaced: r.Namespaced})
		}
	}
	return out
}

// findSelected lists the resource's objects that selector selects, a few
// pages at most, and returns the first one the clause's namespaces,
// namespace selectors and object names keep, or "".
func findSelected(ctx context.Context, meta metadata.Interface, r resource, selector string, test ksv1alpha1.DownsyncObjectTest,
	nsLabels map[string]labels.Set) (string, error) {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: undoPageSize}
	for range undoMaxPages {
		list, err := meta.Resource(r.gvr).List(ctx, opts)
		if err != nil {
			if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				return "", nil // what the caller may not read is not counted
			}
			return "", fmt.Errorf("listing %s: %w", r.gvr.GroupResource(), err)
		}
		for _, obj := range list.Items {
			keep, err := kept(ctx, meta, r, obj.GetNamespace(), obj.GetName(), test, nsLabels)
			if err != nil {
				return "", err
			}
			if keep {
				if obj.GetNamespace() == "" {
					return fmt.Sprintf("%s %s", r.kind, obj.GetName()), nil
				}
				return fmt.Sprintf("%s %s/%s", r.kind, obj.GetNamespace(), obj.GetName()), nil
			}
		}
		if opts.Continue = list.GetContinue(); opts.Continue == "" {
			break
		}
	}
	return "", nil
}

// kept reports whether an object the clause's object selector selects
// meets the rest of the clause, as KubeStellar's DownsyncObjectTest says.
func kept(ctx context.Context, meta metadata.Interface, r resource, namespace, name string, test ksv1alpha1.DownsyncObjectTest,
	nsLabels map[string]labels.Set) (bool, error) {
	if len(test.ObjectNames) > 0 && !slices.Contains(test.ObjectNames, "*") && !slices.Contains(test.ObjectNames, name) {
		return false, nil
	}
	if len(test.Namespaces) > 0 && !slices.Contains(test.Namespaces, "*") && (!r.namespaced || !slices.Contains(test.Namespaces, namespace)) {
		return false, nil
	}
	if len(test.NamespaceSelectors) == 0 {
		return true, nil
	}
	if !r.namespaced {
		return slices.ContainsFunc(test.NamespaceSelectors, func(s metav1.LabelSelector) bool {
			return len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0
		}), nil
	}
	set, ok := nsLabels[namespace]
	if !ok {
		ns, err := meta.Resource(schema.GroupVersionResource{Version: "v1", Resource: "namespaces"}).Get(ctx, namespace, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsForbidden(err) {
			return false, fmt.Errorf("reading namespace %s: %w", namespace, err)
		}
		if err == nil {
			set = ns.GetLabels()
		}
		nsLabels[namespace] = set
	}
	for _, s := range test.NamespaceSelectors {
		selector, err := metav1.LabelSelectorAsSelector(&s)
		if err == nil && selector.Matches(set) {
			return true, nil
		}
	}
	return false, nil
}
