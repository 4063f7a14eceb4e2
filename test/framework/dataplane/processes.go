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

package dataplane

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/kubestellar/workload-stager/test/framework/process"
)

// transportReady is what KubeStellar's transport controller logs once its
// informers have synced and its workers run.
const transportReady = "started workers"

// StartTransport starts KubeStellar's OCM transport controller for one WDS:
// it reads the WDS's Bindings and writes their ManifestWorks, labelled with
// wdsName, into the ITS. It returns once the controller's workers run. The
// kubeconfigs are paths of files; the metrics and pprof servers, which it
// always runs, get free loopback ports.
func StartTransport(ctx context.Context, binary, wdsName, wdsKubeconfig, itsKubeconfig, logPath string, extraArgs ...string) (*process.Process, error) {
	return startServing(ctx, 2, func(addrs []string) process.Spec {
		return process.Spec{
			Name:   "KubeStellar's transport controller for " + wdsName,
			Binary: binary,
			Args: append([]string{
				"--wds-name=" + wdsName,
				"--wds-kubeconfig=" + wdsKubeconfig,
				"--transport-kubeconfig=" + itsKubeconfig,
				// The defaults (5 and 10) hold a Binding's ManifestWorks back
				// behind client-side throttling as soon as a few WECs share it.
				"--wds-qps=100", "--wds-burst=200",
				"--transport-qps=100", "--transport-burst=200",
				"--metrics-bind-address=" + addrs[0],
				"--pprof-bind-address=" + addrs[1],
			}, extraArgs...),
			LogPath: logPath,
			Ready:   func(line string) bool { return strings.Contains(line, transportReady) },
		}
	})
}

// startAttempts is how often startServing starts a program whose port was
// taken between FreeAddresses and its listening.
const startAttempts = 3

// settleTime is how long startServing watches a started (and ready) program
// for an exit: the transport controller and the work agent bind their
// servers in the background and exit when a port is taken.
const settleTime = time.Second

// startServing starts a program with ports free loopback addresses, waits
// until it is ready and has not exited for settleTime, and starts it again
// with fresh addresses when it exited because one was taken meanwhile.
func startServing(ctx context.Context, ports int, spec func(addrs []string) process.Spec) (*process.Process, error) {
	for attempt := 1; ; attempt++ {
		addrs, err := process.FreeAddresses(ports)
		if err != nil {
			return nil, err
		}
		p, err := process.Start(spec(addrs))
		if err != nil {
			return nil, err
		}
		err = p.WaitReady(ctx)
		if err == nil {
			select {
			case <-time.After(settleTime):
			case <-ctx.Done():
			}
			if p.Exited() {
				err = fmt.Errorf("%s exited; log %s ends with:\n%s", p.Name(), p.LogPath(), p.Tail())
			}
		}
		if err == nil {
			return p, nil
		}
		stopErr := p.Stop()
		if !p.PortTaken() || attempt == startAttempts {
			return nil, errors.Join(err, stopErr)
		}
	}
}

// StartGarbageCollector starts a kube-controller-manager that runs only the
// garbage collector and the namespace controller on a space (a WDS or the
// ITS), which envtest starts without any: KubeStellar relies on it to delete
// the Binding of a deleted BindingPolicy, and the status add-on on it to
// delete the WorkStatuses of a deleted ManifestWork.
func StartGarbageCollector(binary, name, kubeconfig, logPath string) (*process.Process, error) {
	return startKubeControllerManager(binary, name, kubeconfig, logPath, "garbagecollector,namespace")
}

// startKubeControllerManager starts kube-controller-manager with the given
// controllers, without leader election, serving nothing, on the credentials
// of its kubeconfig (envtest's spaces have no service account signing key
// for per-controller credentials).
func startKubeControllerManager(binary, name, kubeconfig, logPath, controllers string) (*process.Process, error) {
	return process.Start(process.Spec{
		Name:   "kube-controller-manager of " + name,
		Binary: binary,
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--controllers=" + controllers,
			"--leader-elect=false",
			"--secure-port=0",
			"--use-service-account-credentials=false",
		},
		LogPath: logPath,
	})
}

// startScheduler starts kube-scheduler without leader election, serving
// nothing.
func startScheduler(binary, name, kubeconfig, logPath string) (*process.Process, error) {
	return process.Start(process.Spec{
		Name:    "kube-scheduler of " + name,
		Binary:  binary,
		Args:    []string{"--kubeconfig=" + kubeconfig, "--leader-elect=false", "--secure-port=0"},
		LogPath: logPath,
	})
}

// startKwok starts kwok on a WEC: it keeps every node annotated
// kwok.x-k8s.io/node=fake alive and moves pods through the Stage objects in
// the WEC.
func startKwok(binary, name, kubeconfig, logPath string) (*process.Process, error) {
	return process.Start(process.Spec{
		Name:   "kwok of " + name,
		Binary: binary,
		Args: []string{
			"--kubeconfig=" + kubeconfig,
			"--manage-nodes-with-annotation-selector=" + kwokNodeAnnotation + "=fake",
			"--enable-crds=Stage",
			"--node-lease-duration-seconds=40",
			"--server-address=127.0.0.1:0",
		},
		LogPath: logPath,
	})
}

// startWorkAgent starts OCM's work agent for one WEC: it applies the
// ManifestWorks in the cluster's namespace of the hub (the ITS) to the WEC,
// records them in AppliedManifestWorks there and reports their conditions
// back to the hub.
func startWorkAgent(ctx context.Context, binary, cluster, hubKubeconfig, wecKubeconfig, logPath string) (*process.Process, error) {
	return startServing(ctx, 1, func(addrs []string) process.Spec {
		return process.Spec{
			Name:   "OCM's work agent of " + cluster,
			Binary: binary,
			Args: []string{
				"agent",
				"--spoke-cluster-name=" + cluster,
				// The kube workload source reads the hub from here; the agent
				// ignores --hub-kubeconfig, which only registration reads.
				"--workload-source-config=" + hubKubeconfig,
				"--kubeconfig=" + wecKubeconfig,
				"--spoke-kubeconfig=" + wecKubeconfig,
				"--namespace=" + agentNamespace,
				"--agent-id=" + cluster,
				"--disable-leader-election",
				"--listen=" + addrs[0],
			},
			LogPath: logPath,
		}
	})
}
