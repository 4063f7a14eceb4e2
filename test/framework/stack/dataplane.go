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
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/process"
)

// startRealWECs starts the ITS's garbage collector and one WEC per cluster,
// in parallel, with the ITS as the work agents' hub.
func (s *Stack) startRealWECs(ctx context.Context, its client.Client) error {
	var err error
	if s.itsConfig, err = writeKubeconfig(s.WorkDir, s.ITSName, s.ITS); err != nil {
		return err
	}
	if err := s.startDataPlaneProcess(s.ITSName, func() (*process.Process, error) {
		return dataplane.StartGarbageCollector(s.binaries.KubeControllerManager, s.ITSName, s.itsConfig,
			logName(s.WorkDir, "garbage-collector", s.ITSName))
	}); err != nil {
		return err
	}
	wecs := make([]*dataplane.WEC, len(s.opts.Clusters))
	errs := make([]error, len(s.opts.Clusters))
	var wg sync.WaitGroup
	for i, c := range s.opts.Clusters {
		wg.Go(func() {
			wecs[i], errs[i] = dataplane.StartWEC(ctx, dataplane.WECOptions{
				Name:           c.Name,
				Binaries:       s.binaries,
				HubKubeconfig:  s.itsConfig,
				ITS:            its,
				WorkDir:        filepath.Join(s.WorkDir, "wecs"),
				Logger:         s.opts.Logger,
				StatusInterval: s.opts.WECsInterval,
			})
		})
	}
	wg.Wait()
	s.mu.Lock()
	stopped := s.stopped
	if !stopped {
		s.RealWECs = map[string]*dataplane.WEC{}
		for _, w := range wecs {
			if w != nil {
				s.RealWECs[w.Name] = w
			}
		}
	}
	s.mu.Unlock()
	if stopped { // Stop ran meanwhile: it did not see these
		for _, w := range wecs {
			if w != nil {
				errs = append(errs, w.Stop())
			}
		}
		errs = append(errs, errors.New("the stack was stopped meanwhile"))
	}
	return errors.Join(errs...)
}

// startTransport starts a WDS's garbage collector and KubeStellar's
// transport controller for it, once KubeStellar's CRDs are in the WDS, and
// records them for forget and Stop.
func (s *Stack) startTransport(ctx context.Context, wds string, space *environment.Space) error {
	kubeconfig, err := writeKubeconfig(s.WorkDir, wds, space)
	if err != nil {
		return err
	}
	if err := s.startDataPlaneProcess(wds, func() (*process.Process, error) {
		return dataplane.StartGarbageCollector(s.binaries.KubeControllerManager, wds, kubeconfig,
			logName(s.WorkDir, "garbage-collector", wds))
	}); err != nil {
		return err
	}
	waitCtx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
	defer cancel()
	return s.startDataPlaneProcess(wds, func() (*process.Process, error) {
		return dataplane.StartTransport(waitCtx, s.binaries.Transport, wds, kubeconfig, s.itsConfig,
			logName(s.WorkDir, "ks-transport-controller", wds))
	})
}

// startDataPlaneProcess starts a process and records it, under owner (a WDS,
// or the ITS), for forget and Stop.
func (s *Stack) startDataPlaneProcess(owner string, start func() (*process.Process, error)) error {
	p, err := start()
	if err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.stopped {
		return errors.Join(errors.New("the stack was stopped meanwhile"), p.Stop())
	}
	if s.dataPlane == nil {
		s.dataPlane = map[string][]*process.Process{}
	}
	s.dataPlane[owner] = append(s.dataPlane[owner], p)
	return nil
}

// stopDataPlaneOf stops and forgets the data plane processes of a WDS.
func (s *Stack) stopDataPlaneOf(owner string) error {
	s.mu.Lock()
	procs := s.dataPlane[owner]
	delete(s.dataPlane, owner)
	s.mu.Unlock()
	errs := make([]error, 0, len(procs))
	for _, p := range procs {
		errs = append(errs, p.Stop())
	}
	return errors.Join(errs...)
}

// stopDataPlane stops the transport controllers, the garbage collectors and
// the WECs.
func (s *Stack) stopDataPlane() error {
	s.mu.Lock()
	var procs []*process.Process
	for _, owned := range s.dataPlane {
		procs = append(procs, owned...)
	}
	wecs := make([]*dataplane.WEC, 0, len(s.RealWECs))
	for _, w := range s.RealWECs {
		wecs = append(wecs, w)
	}
	s.mu.Unlock()
	errs := make([]error, len(procs)+len(wecs))
	var wg sync.WaitGroup
	for i, p := range procs {
		wg.Go(func() { errs[i] = p.Stop() })
	}
	for i, w := range wecs {
		wg.Go(func() { errs[len(procs)+i] = w.Stop() })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// TransportLog returns the path of the log of the named WDS's transport
// controller (RealDataPlane).
func (s *Stack) TransportLog(wds string) string {
	return logName(s.WorkDir, "ks-transport-controller", wds)
}

// writeKubeconfig writes a space's kubeconfig into the work directory.
func writeKubeconfig(workDir, name string, space *environment.Space) (string, error) {
	path := filepath.Join(workDir, name+".kubeconfig")
	if err := os.WriteFile(path, space.Kubeconfig(), 0o600); err != nil {
		return "", fmt.Errorf("writing the kubeconfig of %s: %w", name, err)
	}
	return path, nil
}

// ITSKubeconfig returns the path of the ITS's kubeconfig file
// (RealDataPlane), the work agents' hub kubeconfig.
func (s *Stack) ITSKubeconfig() string {
	return s.itsConfig
}
