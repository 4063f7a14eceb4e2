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

// Command stager-demo (make demo) runs the local demo environment: a hosting space, an
// ITS, two WDSes each with KubeStellar's real controller-manager and transport,
// five real WECs whose pods kwok runs, and the stager, printing the stage
// progress and what the WECs run until interrupted (Ctrl-C).
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "stager-demo:", err)
		os.Exit(1)
	}
}

func run() error {
	stager := flag.String("stager", "bin/stager", "path of the stager binary")
	workDir := flag.String("workdir", "", "directory for the kubeconfigs and the stager's log (default: a new temporary directory)")
	flag.Parse()

	dir, err := prepareWorkDir(*workDir)
	if err != nil {
		return err
	}
	logFile, err := os.Create(filepath.Join(dir, "stack.log"))
	if err != nil {
		return err
	}
	defer func() { _ = logFile.Close() }()
	logger := zap.New(zap.WriteTo(logFile), zap.UseDevMode(true))
	log.SetLogger(logger)

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	return Run(ctx, Options{StagerBinary: *stager, WorkDir: dir, Out: os.Stdout, Logger: logger})
}

// prepareWorkDir returns the demo's work directory: dir, made if it does not exist
// yet, or a new temporary directory when dir is empty.
func prepareWorkDir(dir string) (string, error) {
	if dir == "" {
		return os.MkdirTemp("", "stager-demo-")
	}
	return dir, os.MkdirAll(dir, 0o755)
}
