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
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os/exec"
	"runtime"
	"time"

	"github.com/go-logr/logr/funcr"
	"github.com/spf13/cobra"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/dashboard"
	"github.com/kubestellar/workload-stager/internal/forecast"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// dashboardFlags are the flags of `kubectl stager dashboard`.
type dashboardFlags struct {
	spaces      *spaceFlags
	prom        *promFlags
	address     string
	allowRemote bool
	open        bool
	maxClients  int
	maxSpaces   int
}

func newDashboardCommand(o *options) *cobra.Command {
	f := &dashboardFlags{}
	cmd := &cobra.Command{
		Use:   "dashboard [--all-spaces] [--address 127.0.0.1:3100] [--allow-remote] [--open]",
		Short: "Serve a web page of every rollout, updated live, with its actions",
		Long: `Serve, on this machine only, a web page of the current context's rollouts (with
--all-spaces, of every space the stager serves): each rollout as a pipeline of
stages with its phase, revision, clusters, analyses, approvals and deadlines, a
page per policy with its Events and what explain says, updated live from
watches. Approve, suspend, resume, abort, retry, restart and promote are
offered for the current context's WDS, performed with your own credentials
(your RBAC and the admission policies apply) after a confirmation; with
--all-spaces the page is read-only, since the spaces are reached with the
registrations' credentials, not yours. Ctrl-C stops it.`,
		Example: `  # the current context's rollouts, at http://127.0.0.1:3100/
  kubectl stager dashboard

  # every space the stager serves, in the browser
  kubectl stager dashboard --all-spaces --open`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return o.dashboard(cmd.Context(), f)
		},
	}
	f.spaces = addSpaceFlags(cmd.Flags())
	f.prom = addPromFlags(cmd.Flags())
	cmd.Flags().StringVar(&f.address, "address", "127.0.0.1:3100", "The address to listen on: a loopback address unless --allow-remote")
	cmd.Flags().BoolVar(&f.allowRemote, "allow-remote", false,
		"Allow a non-loopback --address (one IP address): whoever reaches it acts with your credentials, over plain HTTP")
	cmd.Flags().BoolVar(&f.open, "open", false, "Open the page in the default browser")
	cmd.Flags().IntVar(&f.maxClients, "max-clients", 32, "The most browser tabs updated live at once")
	cmd.Flags().IntVar(&f.maxSpaces, "max-spaces", 64, "The most spaces shown and watched")
	return cmd
}

// dashboard serves the dashboard until ctx is done.
func (o *options) dashboard(ctx context.Context, f *dashboardFlags) error {
	warning, err := dashboard.CheckAddress(f.address, f.allowRemote)
	if err != nil {
		return err
	}
	if f.prom.space != "" && f.spaces.all {
		return errors.New("--prometheus-space names one space: with --all-spaces, each space's own name is used")
	}
	fc, err := newForecaster(f.prom, o.streams.ErrOut)
	if err != nil {
		return err
	}
	targets, err := o.targets(ctx, f.spaces)
	if err != nil {
		return err
	}
	source := dashboard.ClientSource{}
	clients := map[string]client.Client{}
	redact, err := o.dashboardRedactions(targets)
	if err != nil {
		return err
	}
	for _, t := range targets {
		c, err := client.NewWithWatch(t.config, client.Options{Scheme: t.client.Scheme()})
		if err != nil {
			return fmt.Errorf("space %s: connecting: %w", t.space, err)
		}
		source[t.space], clients[t.space] = c, t.client
	}
	opts := dashboard.Options{Source: source, Redact: redact, MaxClients: f.maxClients, MaxSpaces: f.maxSpaces, Now: o.now,
		Logger: funcr.New(func(prefix, args string) { fprintf(o.streams.ErrOut, "%s %s\n", prefix, args) }, funcr.Options{}),
		Explain: func(ctx context.Context, space, name string) (string, error) {
			c, ok := clients[space]
			if !ok {
				return "", fmt.Errorf("no space %q", space)
			}
			return o.explainFor(ctx, c, space, name, fc)
		},
		Forecast: func(ctx context.Context, space string, p *v1alpha1.StagedBindingPolicy) string {
			return forecastLine(ctx, fc, space, p, o.now())
		}}
	if !f.spaces.all {
		opts.Act = o.act
	}
	listener, err := (&net.ListenConfig{}).Listen(ctx, "tcp", f.address)
	if err != nil {
		return fmt.Errorf("listening on %s: %w", f.address, err)
	}
	opts.Address = listener.Addr().String()
	server, err := dashboard.New(opts)
	if err != nil {
		_ = listener.Close()
		return err
	}
	if warning != "" {
		fprintf(o.streams.ErrOut, "%s\n", warning)
	}
	url := "http://" + opts.Address + "/"
	fprintf(o.streams.Out, "Serving the dashboard at %s (Ctrl-C stops it)\n", url)
	if f.open {
		openBrowser(ctx, url, o.streams.ErrOut)
	}
	httpServer := &http.Server{Handler: server, ReadHeaderTimeout: 10 * time.Second}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	watched := make(chan struct{})
	go func() { defer close(watched); server.Run(ctx) }()
	served := make(chan error, 1)
	go func() { served <- httpServer.Serve(listener) }()
	select {
	case <-ctx.Done():
	case err = <-served:
	}
	cancel()
	<-watched // every live client is dropped: Shutdown need not wait for them
	shutdown, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	_ = httpServer.Shutdown(shutdown)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the dashboard: %w", err)
	}
	return nil
}

// act performs a dashboard action with the plugin's own command, as the
// user of the current context: what it prints, or why it was refused.
func (o *options) act(ctx context.Context, a dashboard.Action) (string, error) {
	var out bytes.Buffer
	scoped := *o
	scoped.streams.Out, scoped.streams.ErrOut = &out, &out
	var cmd *cobra.Command
	var args []string
	switch a.Verb {
	case "approve":
		cmd = newApproveCommand(&scoped)
		if a.Stage != "" {
			args = append(args, "--stage="+a.Stage)
		}
	case "suspend", "resume":
		cmd = newSuspendCommand(&scoped, a.Verb == "suspend")
	case "abort", "retry":
		cmd = newAbortCommand(&scoped, a.Verb == "abort")
	case "restart":
		cmd = newRestartCommand(&scoped)
	case "promote":
		cmd = newPromoteCommand(&scoped)
		args = append(args, "--reason="+a.Reason)
	default:
		return "", fmt.Errorf("no action %q", a.Verb)
	}
	// "--" ends the flags: a name cannot be taken for one.
	cmd.SetArgs(append(args, "--", a.Policy))
	cmd.SetOut(&out)
	cmd.SetErr(io.Discard)
	cmd.SilenceErrors, cmd.SilenceUsage = true, true
	err := cmd.ExecuteContext(ctx)
	return out.String(), err
}

// explainFor returns what `kubectl stager explain NAME` prints, reading
// through c.
func (o *options) explainFor(ctx context.Context, c client.Client, space, name string, fc *forecaster) (string, error) {
	p, err := getPolicy(ctx, c, name)
	if err != nil {
		return "", err
	}
	stage, err := stageOrActive(p, "")
	if err != nil {
		return "", err
	}
	objs, err := readStage(ctx, c, p, stage.Name)
	if err != nil {
		return "", err
	}
	engine, err := newEngine()
	if err != nil {
		return "", err
	}
	defer engine.Close()
	e, err := rollout.ExplainStage(engine, *stage, objs.bindingPolicy, objs.binding, objs.statuses)
	if err != nil {
		return "", err
	}
	var out bytes.Buffer
	f, _ := fc.forecast(ctx, space, p, o.now())
	printStage(&out, p, stage, objs, e, o, f)
	return out.String(), nil
}

// openBrowser opens url in the default browser, saying so when it cannot.
func openBrowser(ctx context.Context, url string, errOut io.Writer) {
	opener := "xdg-open"
	if runtime.GOOS == "darwin" {
		opener = "open"
	}
	if err := exec.CommandContext(ctx, opener, url).Start(); err != nil {
		fprintf(errOut, "opening the browser: %v; open %s yourself\n", err, url)
	}
}

// forecastLine is the completion forecast of p, a policy of space, as the
// dashboard shows it: explain's sentence, with its basis when it
// estimates, and why Prometheus did not serve it when it did not.
func forecastLine(ctx context.Context, fc *forecaster, space string, p *v1alpha1.StagedBindingPolicy, now time.Time) string {
	f, note := fc.forecast(ctx, space, p, now)
	line := f.Sentence(now)
	switch f.Kind {
	case forecast.Estimated, forecast.Gated:
		line += " (" + f.Basis.String() + ")"
	}
	if note != "" {
		line += " (" + note + ")"
	}
	return line
}
