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

// Package app holds the commands of `kubectl stager`, the workload stager's
// kubectl plugin: get, explain and eval read a WDS's rollouts and try
// expressions with the controller's own CEL engine; approve, suspend,
// resume and restart steer them through the API. kubectl's own flags
// (--kubeconfig, --context, ...) work, from k8s.io/cli-runtime.
package app

import (
	"fmt"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	"github.com/spf13/cobra"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// options are what every command shares: kubectl's connection flags, the
// streams, and the clock ages and times are told against.
type options struct {
	configFlags *genericclioptions.ConfigFlags
	streams     genericiooptions.IOStreams
	now         func() time.Time
}

// New returns the `kubectl stager` command writing to streams, telling ages
// against now.
func New(streams genericiooptions.IOStreams, now func() time.Time) *cobra.Command {
	o := &options{configFlags: genericclioptions.NewConfigFlags(true), streams: streams, now: now}
	root := &cobra.Command{
		Use:   "kubectl-stager",
		Short: "Watch, explain, try and steer staged rollouts (StagedBindingPolicies)",
		Long: `kubectl stager reads the StagedBindingPolicies of the current context's WDS
and steers them:

  get      where every rollout is, stage by stage
  explain  what a stage sees: its clusters, each object's CombinedStatus and the
           condition's value for it, and what it waits for
  eval     try a draft filter or condition on the live objects, with the
           stager's own CEL engine and limits, or run an analysis's query once
  approve, suspend, resume, restart
           steer a rollout through the API (StageApprovals, spec.suspend, the
           restartedAt annotation)
  history, undo
           list a policy's last rollouts (status.history); roll a completed
           revision out again (spec.revision)
  promote  break glass: treat the active stage, or every stage left, as done
           (spec.promotion)
  dashboard
           a live web page of every rollout, with its actions, on this machine
  record, test
           record what a stage's gates read into a GateTest; run GateTests
           offline, with the stager's own engine, limits and messages`,
		SilenceUsage: true,
		Annotations:  map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl stager"},
	}
	root.SetIn(streams.In)
	root.SetOut(streams.Out)
	root.SetErr(escapingWriter{streams.ErrOut})
	o.configFlags.AddFlags(root.PersistentFlags())
	root.AddCommand(newGetCommand(o), newExplainCommand(o), newEvalCommand(o),
		newApproveCommand(o), newSuspendCommand(o, true), newSuspendCommand(o, false), newRestartCommand(o),
		newAbortCommand(o, true), newAbortCommand(o, false))
	root.AddCommand(newHistoryCommand(o), newUndoCommand(o))
	root.AddCommand(newPromoteCommand(o))
	root.AddCommand(newDashboardCommand(o))
	root.AddCommand(newTestCommand(o), newRecordCommand(o))
	return root
}

// client returns a client of the WDS the flags name.
func (o *options) client() (client.Client, error) {
	config, err := o.configFlags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("reading the kubeconfig: %w", err)
	}
	return clientFor(config)
}

// clientFor returns a client of the cluster config reaches, knowing the
// stager's and KubeStellar's kinds.
func clientFor(config *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{v1alpha1.AddToScheme, hostingv1alpha1.AddToScheme, ksv1alpha1.AddToScheme,
		authenticationv1.AddToScheme, corev1.AddToScheme} {
		if err := add(scheme); err != nil {
			return nil, err
		}
	}
	c, err := client.New(config, client.Options{Scheme: scheme})
	if err != nil {
		return nil, fmt.Errorf("connecting to %s: %w", config.Host, err)
	}
	return c, nil
}

// completePolicies completes a policy name from the WDS.
func (o *options) completePolicies(cmd *cobra.Command, args []string, _ string) ([]string, cobra.ShellCompDirective) {
	if len(args) > 0 {
		return nil, cobra.ShellCompDirectiveNoFileComp
	}
	c, err := o.client()
	if err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	list := &v1alpha1.StagedBindingPolicyList{}
	if err := c.List(cmd.Context(), list); err != nil {
		return nil, cobra.ShellCompDirectiveError
	}
	names := make([]string, 0, len(list.Items))
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names, cobra.ShellCompDirectiveNoFileComp
}
