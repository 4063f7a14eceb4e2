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
	"errors"
	"io"

	"github.com/spf13/cobra"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

func newEvalCommand(o *options) *cobra.Command {
	var stageName, condition, filter string
	var q queryFlags
	cmd := &cobra.Command{
		Use:   "eval NAME (--condition EXPR | --filter EXPR | --analysis NAME [--query PROMQL])",
		Short: "Try a draft filter or condition against a stage's live objects, or run an analysis's query once",
		Long: `Evaluate a draft condition (root obj, also combinedStatus) or filter (root
downsyncClause) against the live Binding and CombinedStatuses of a stage (the
active one unless --stage names another), with the stager's own CEL engine,
cost limits and error messages, without changing anything. A draft condition
is evaluated on the objects the stage's filter selects; a draft filter shows
what it would select, and the stage's condition on those.

With --analysis, send the query of one of the stage's analyses (or a draft,
--query) once to the MetricProvider it names, read with your own rights from
the stager's hosting cluster (--hosting-context), under the stager's default
bounds, and judge the answer with the analysis's conditions, as the stager
would.`,
		Example: `  # would this condition hold on test's objects?
  kubectl stager eval web --stage test \
    --condition "obj.results.exists(r, r.rows.exists(row, row.columns.exists(c, c.float == '1')))"

  # which objects would this filter select?
  kubectl stager eval web --filter "downsyncClause.resource == 'deployments'"

  # what does prod's analysis error-rate measure now?
  kubectl stager eval web --stage prod --analysis error-rate --hosting-context hosting`,
		Args:              cobra.ExactArgs(1),
		ValidArgsFunction: o.completePolicies,
		RunE: func(cmd *cobra.Command, args []string) error {
			if q.analysis != "" {
				if condition != "" || filter != "" {
					return errors.New("give --analysis without --condition and --filter")
				}
				return o.evalAnalysis(cmd, args[0], stageName, q)
			}
			if q.query != "" {
				return errors.New("--query needs --analysis")
			}
			if (condition == "") == (filter == "") {
				return errors.New("give exactly one of --condition, --filter and --analysis")
			}
			return o.explain(cmd, args[0], stageName, func(s *v1alpha1.Stage) string {
				if condition != "" {
					s.Condition = condition
					return "condition"
				}
				s.Filter = filter
				return "filter"
			}, nil)
		},
	}
	cmd.Flags().StringVar(&stageName, "stage", "", "The stage whose objects to use (default: the active stage)")
	cmd.Flags().StringVar(&condition, "condition", "", "A draft condition (CEL, root obj)")
	cmd.Flags().StringVar(&filter, "filter", "", "A draft filter (CEL, root downsyncClause)")
	q.addFlags(cmd.Flags())
	return cmd
}

// printEvaluation prints what a draft expression says of a stage's objects.
func printEvaluation(out io.Writer, p *v1alpha1.StagedBindingPolicy, stage *v1alpha1.Stage, what string,
	e rollout.StageExplanation) {
	expr := stage.Condition
	if what == "filter" {
		expr = stage.Filter
	}
	fprintf(out, "Draft %s on stage %s of %s:\n  %s\n", what, stage.Name, p.Name, expr)
	printObjectTable(out, e)
	selected, holds := 0, 0
	for _, obj := range e.Objects {
		if obj.Selected {
			selected++
		}
		if obj.Holds != nil && *obj.Holds {
			holds++
		}
	}
	switch {
	case len(e.Objects) == 0:
	case stage.Condition == "":
		fprintf(out, "\nSelects %d of %d object(s); the stage has no condition.\n", selected, len(e.Objects))
	default:
		fprintf(out, "\nSelects %d of %d object(s); the condition holds for %d of them. With it the stage would say: %s: %s\n",
			selected, len(e.Objects), holds, e.Reason, e.Message)
	}
}
