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
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/duration"
	"k8s.io/cli-runtime/pkg/printers"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

func newHistoryCommand(o *options) *cobra.Command {
	return &cobra.Command{
		Use:   "history NAME",
		Short: "List the last rollouts of a policy's revisions (status.history)",
		Long: `List the last rollouts of a policy's revisions, oldest first, as its
status.history records them (at most 10): when each started and ended, how it
ended (Progressing, Completed, Aborted, Superseded, Promoted) and who approved
or promoted its stages. A policy without spec.revision records none.
kubectl stager undo rolls a Completed one out again.`,
		Example:           "  kubectl stager history web",
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			_, p, err := o.policy(cmd.Context(), args[0])
			if err != nil {
				return err
			}
			return printHistory(o.streams.Out, p, o.now())
		},
	}
}

// printHistory prints the policy's history as a table, ages told against now.
func printHistory(out io.Writer, p *v1alpha1.StagedBindingPolicy, now time.Time) error {
	if len(p.Status.History) == 0 {
		if p.Spec.Revision == nil && p.Status.UpdateRevision == "" {
			fprintf(out, "StagedBindingPolicy %s has no spec.revision: its rollouts have no revision to record\n", p.Name)
		} else {
			fprintf(out, "StagedBindingPolicy %s has no rollout recorded yet\n", p.Name)
		}
		return nil
	}
	w := printers.GetNewTabWriter(out)
	fmt.Fprintln(w, "REVISION\tOUTCOME\tSTARTED\tENDED\tDURATION\tAPPROVED BY\tPROMOTED BY")
	for _, h := range p.Status.History {
		ended, took := "-", duration.HumanDuration(now.Sub(h.StartTime.Time))+" so far"
		if h.EndTime != nil {
			ended = age(h.EndTime.Time, now) + " ago"
			took = duration.HumanDuration(h.EndTime.Sub(h.StartTime.Time))
		}
		fprintf(w, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", h.Revision, string(h.Outcome), age(h.StartTime.Time, now)+" ago", ended, took,
			users(h.ApprovedBy), users(h.PromotedBy))
	}
	return w.Flush()
}

// users lists user names in a cell, or "-".
func users(names []string) string {
	if len(names) == 0 {
		return "-"
	}
	return strings.Join(names, ",")
}
