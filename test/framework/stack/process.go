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
	"fmt"
	"path/filepath"
	"strings"

	"github.com/kubestellar/workload-stager/test/framework/process"
)

const (
	// readyMarker is logged once by each of the two controllers of
	// KubeStellar's controller-manager (binding, then status) when its
	// workers run; the status controller logs it only after it has received
	// the binding controller's listers.
	readyMarker = "Started workers"
	// readyMarkers is how many readyMarker lines mean "ready".
	readyMarkers = 2
)

// controllerManager is one running KubeStellar controller-manager process.
type controllerManager struct {
	*process.Process
}

// startControllerManager starts KubeStellar's controller-manager for one WDS
// and one ITS, with the hosting space's kubeconfig and free loopback ports,
// appending its output to logPath. It cancels its context on the first
// SIGTERM and exits on the second.
func startControllerManager(binary, hostingKubeconfig, wds, its, logPath string, extraArgs []string) (*controllerManager, error) {
	addrs, err := process.FreeAddresses(3)
	if err != nil {
		return nil, err
	}
	seen := 0
	p, err := process.Start(process.Spec{
		Name:   "KubeStellar's controller-manager for " + wds,
		Binary: binary,
		Args: append([]string{
			"--kubeconfig=" + hostingKubeconfig,
			"--wds-name=" + wds,
			"--its-name=" + its,
			"--metrics-bind-address=" + addrs[0],
			"--health-probe-bind-address=" + addrs[1],
			"--pprof-bind-address=" + addrs[2],
		}, extraArgs...),
		LogPath: logPath,
		Ready: func(line string) bool {
			if strings.Contains(line, readyMarker) {
				seen++
			}
			return seen == readyMarkers
		},
		TermTwice:   true,
		StopTimeout: stopTimeout,
	})
	if err != nil {
		return nil, err
	}
	return &controllerManager{Process: p}, nil
}

// logName returns the name of a stack process's log in the work directory.
func logName(workDir, program, instance string) string {
	return filepath.Join(workDir, fmt.Sprintf("%s-%s.log", program, instance))
}
