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

package stack

import (
	"context"
	"fmt"

	"github.com/kubestellar/workload-stager/cmd/stager/app"
	"github.com/kubestellar/workload-stager/test/framework"
	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// StartSuite is the bring-up the suites that run the stager binary on a
// stack share (test/e2e, test/realdataplane, test/install): it finds or
// builds the stager binary (StagerBinary, in the suite's work directory),
// then starts the stack o describes, its WDSes with the stager's scheme
// after o.WDSOptions, its logs in the suite's work directory and its
// progress in the suite's log unless o says otherwise, stopped with the
// suite. It returns the stack and the stager binary.
func StartSuite(s *framework.Suite, o Options) (*Stack, string, error) {
	binary, err := StagerBinary(s.WorkDir)
	if err != nil {
		return nil, "", err
	}
	scheme, err := app.NewScheme()
	if err != nil {
		return nil, "", err
	}
	o.WDSOptions = append(o.WDSOptions, environment.WithScheme(scheme))
	if o.WorkDir == "" {
		o.WorkDir = s.WorkDir
	}
	if o.Logger.GetSink() == nil {
		o.Logger = s.Logger
	}
	st, err := Start(s.Ctx, o)
	if err != nil {
		return nil, "", err
	}
	s.Defer(st.Stop)
	return st, binary, nil
}

// ServeWDS registers a WDS of the stack with the stager (RegisterWithStager)
// and creates in it the DeploymentsAggregator StatusCollector named
// collector, which the suites' policies name.
func (s *Stack) ServeWDS(ctx context.Context, wds, collector string) error {
	if err := s.RegisterWithStager(ctx, wds); err != nil {
		return err
	}
	s.mu.Lock()
	space := s.WDS[wds]
	s.mu.Unlock()
	if err := space.Client.Create(ctx, NewDeploymentsAggregator(collector)); err != nil {
		return fmt.Errorf("creating the StatusCollector in %s: %w", wds, err)
	}
	return nil
}
