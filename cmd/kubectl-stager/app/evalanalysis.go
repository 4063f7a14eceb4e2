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
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/analysis"
	"github.com/kubestellar/workload-stager/internal/rollout"
	"github.com/kubestellar/workload-stager/providers/kubeconfig"
)

// queryFlags are the flags of eval --analysis.
type queryFlags struct {
	analysis, query, hostingContext, secretNamespace, space string
	allowInsecure                                           bool
}

func (q *queryFlags) addFlags(fs *pflag.FlagSet) {
	fs.StringVar(&q.analysis, "analysis", "", "Run the query of this analysis of the stage once against its MetricProvider")
	fs.StringVar(&q.query, "query", "", "With --analysis, a draft query to run instead of the analysis's (PromQL, with its placeholders)")
	fs.StringVar(&q.hostingContext, "hosting-context", "",
		"With --analysis, the kubeconfig context of the stager's hosting cluster, where the MetricProviders are (default: the current context)")
	fs.StringVar(&q.secretNamespace, "metric-provider-secret-namespace", kubeconfig.DefaultNamespace,
		"With --analysis, the namespace of the Secrets MetricProviders name, as the stager's flag of the same name")
	fs.StringVar(&q.space, "space", "", "With --analysis, the space's name as the stager knows it, for the query's {{space}} and the provider's spec.spaces")
	fs.BoolVar(&q.allowInsecure, "allow-insecure-metric-providers", false,
		"With --analysis, let the MetricProvider be plain http, as the stager's flag of the same name")
}

// evalAnalysis runs an analysis's query once and prints what its
// conditions say of the answer.
func (o *options) evalAnalysis(cmd *cobra.Command, name, stageName string, q queryFlags) error {
	ctx := cmd.Context()
	c, p, stage, err := o.policyStage(ctx, name, stageName)
	if err != nil {
		return err
	}
	i := slices.IndexFunc(stage.Analysis, func(a v1alpha1.Analysis) bool { return a.Name == q.analysis })
	if i < 0 {
		return fmt.Errorf("stage %q of %s has no analysis %q", stage.Name, p.Name, q.analysis)
	}
	a := stage.Analysis[i]
	if q.query != "" {
		if a.Web != nil {
			return fmt.Errorf("analysis %q is a web analysis: --query drafts a PromQL query", a.Name)
		}
		a.Query = q.query
	}
	objs, err := readStage(ctx, c, p, stage.Name)
	if err != nil {
		return err
	}
	qc := analysis.Context{Space: q.space, Policy: p.Name, Stage: stage.Name, Revision: p.Status.UpdateRevision,
		Clusters: analysis.ClusterNames(objs.binding)}
	hosting, err := o.hostingClient(q.hostingContext)
	if err != nil {
		return err
	}
	providers := &analysis.Providers{Reader: hosting, Options: analysis.Options{AllowInsecure: q.allowInsecure,
		Timeout: analysis.DefaultTimeout, MaxResponseBytes: analysis.DefaultMaxResponseBytes, SecretNamespace: q.secretNamespace}}
	engine, err := newEngine()
	if err != nil {
		return err
	}
	defer engine.Close()
	var m v1alpha1.Measurement
	var queryErr error
	var request string
	if a.Web != nil {
		req := analysis.RenderWeb(a.Web, qc)
		request = "GET /" + strings.TrimLeft(req.Path, "/")
		if len(req.Params) > 0 {
			request += "?" + req.Params.Encode()
		}
		var answer []byte
		answer, queryErr = providers.Fetch(ctx, q.space, a.Provider, req)
		m, err = rollout.JudgeWebMeasurement(engine, a, answer, queryErr, metav1.NewTime(o.now()))
	} else {
		request = analysis.Render(a.Query, qc)
		var values []float64
		values, queryErr = providers.Query(ctx, q.space, a.Provider, request)
		m, err = rollout.JudgeMeasurement(engine, a, values, queryErr, metav1.NewTime(o.now()))
	}
	if err != nil {
		return err
	}
	out := o.streams.Out
	fprintf(out, "Analysis %s of stage %s of %s, on MetricProvider %s:\n", a.Name, stage.Name, p.Name, a.Provider)
	if a.Web != nil {
		fprintf(out, "  request:    %s\n", request)
	} else {
		fprintf(out, "  query:      %s\n", request)
	}
	if queryErr != nil {
		// The hosting cluster's reader may see what the space's may not.
		fprintf(out, "  answer:     none: %s\n", analysis.Detail(queryErr))
	} else {
		fprintf(out, "  answer:     %s\n", m.Value)
	}
	if a.SuccessCondition != "" {
		fprintf(out, "  success:    %s\n", a.SuccessCondition)
	}
	if a.FailureCondition != "" {
		fprintf(out, "  failure:    %s\n", a.FailureCondition)
	}
	verdict := string(m.Phase)
	if m.Message != "" {
		verdict += ": " + m.Message
	}
	fprintf(out, "  verdict:    %s\n", verdict)
	return nil
}

// hostingClient returns a client of the stager's hosting cluster: the
// kubeconfig context named, or the current one.
func (o *options) hostingClient(contextName string) (client.Client, error) {
	if contextName == "" {
		return o.client()
	}
	raw, err := o.configFlags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	config, err := clientcmd.NewNonInteractiveClientConfig(raw, contextName, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("context %q: %w", contextName, err)
	}
	return clientFor(config)
}
