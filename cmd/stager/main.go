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

// Command stager runs the KubeStellar Workload Stager: one process serving the
// StagedBindingPolicies of many spaces (WDSes).
package main

import (
	"flag"
	"fmt"
	"os"
	// The time zones of the stages' change windows (Europe/Berlin, ...)
	// must load wherever the stager runs, also in an image or on a host
	// without /usr/share/zoneinfo: this builds in a copy of the IANA
	// database (about 450 KB), used when the system has none.
	_ "time/tzdata"

	"github.com/spf13/pflag"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
)

func main() {
	opts := app.NewOptions()
	zapOpts := zap.Options{}
	fs, printVersion := flags(opts, &zapOpts, flag.CommandLine)
	if err := fs.Parse(os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if *printVersion {
		fmt.Println(app.BinaryVersion())
		return
	}

	logger := zap.New(zap.UseFlagOptions(&zapOpts))
	ctrl.SetLogger(logger)
	if set := app.TuneRuntime(opts.GCPercent, app.CgroupMemoryMax); len(set) > 0 {
		logger.Info("Tuned the Go runtime", "set", set)
	}
	ctx := ctrl.SetupSignalHandler()

	cfg, err := ctrl.GetConfig()
	if err != nil {
		logger.Error(err, "Cannot load the hosting cluster's kubeconfig")
		os.Exit(1)
	}
	stager, err := app.New(ctx, cfg, opts, logger)
	if err != nil {
		logger.Error(err, "Cannot set up the stager")
		os.Exit(1)
	}
	logger.Info("Starting the stager", "version", app.BinaryVersion().String(), "provider", opts.Providers.Kind)
	if err := stager.Start(ctx); err != nil {
		logger.Error(err, "The stager stopped with an error")
		os.Exit(1)
	}
}

// flags returns every flag of the stager, the options' and the logger's, with
// those of goFlags (controller-runtime registers --kubeconfig there), and
// where --version is kept. docs/operations.md lists them (TestDocumentedFlags).
func flags(opts *app.Options, zapOpts *zap.Options, goFlags *flag.FlagSet) (*pflag.FlagSet, *bool) {
	fs := pflag.NewFlagSet("stager", pflag.ExitOnError)
	opts.AddFlags(fs)
	printVersion := fs.Bool("version", false, "Print the stager's version and commit, and exit.")
	zapFlags := flag.NewFlagSet("stager", flag.ExitOnError)
	zapOpts.BindFlags(zapFlags)
	fs.AddGoFlagSet(zapFlags)
	fs.AddGoFlagSet(goFlags)
	return fs, printVersion
}
