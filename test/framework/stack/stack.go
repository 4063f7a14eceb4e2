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

// Package stack starts a real KubeStellar v0.30.0 control plane locally, out
// of real processes, for end-to-end tests and demos of the workload stager:
//
//   - a hosting space, an ITS and one or more WDSes, each a kube-apiserver
//     with its etcd (test/framework/environment spaces; $KUBEBUILDER_ASSETS must name
//     the binaries, as `make test` arranges);
//   - in the hosting space, the KubeFlex ControlPlane objects (and kubeconfig
//     Secrets) through which KubeStellar finds its spaces;
//   - in the ITS, OCM's ManagedCluster inventory (one labelled ManagedCluster
//     and one namespace per WEC) and the WorkStatus API of KubeStellar's OCM
//     status add-on;
//   - per WDS, one real KubeStellar controller-manager process (binding and
//     status controllers), which installs KubeStellar's CRDs in the WDS,
//     resolves BindingPolicies into Bindings and combines WorkStatuses into
//     CombinedStatuses;
//   - after it, either simulated WECs (WECs, SimulatedDataPlane, the
//     default): an in-process agent that writes, for every Binding
//     destination and workload object, the WorkStatus KubeStellar's OCM
//     status add-on would write, with a status the caller controls; or
//     KubeStellar's real data plane (RealDataPlane, test/framework/dataplane):
//     a transport controller per WDS, and per cluster a WEC whose pods run,
//     with OCM's work agent, reporting through a stand-in of the status
//     add-on.
//
// Never run: OCM's hub controllers and registration agent, KubeFlex's
// controllers. With SimulatedDataPlane the binding and status controllers
// do not need the rest: the binding controller reads only ManagedClusters
// from the ITS, the status controller only WorkStatuses.
//
// KubeStellar batches its work: a BindingPolicy becomes a Binding after about
// 2 s, a WorkStatus change reaches the CombinedStatus after about 5 s.
//
// Typical use:
//
//	st, err := stack.Start(ctx, stack.Options{
//		WDSes:    []string{"wds1"},
//		Clusters: []kubestellar.Cluster{{Name: "dev1", Labels: map[string]string{"env": "dev"}}},
//	})
//	if err != nil { ... }
//	defer st.Stop()
//	_ = st.WDS["wds1"].Client.Create(ctx, bindingPolicy)
//	st.WECs.SetAvailable(stack.Match{Cluster: "dev1"}, 1)
package stack

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/dataplane"
	"github.com/kubestellar/workload-stager/test/framework/environment"
	"github.com/kubestellar/workload-stager/test/framework/kubestellar"
	"github.com/kubestellar/workload-stager/test/framework/process"
)

const (
	// DefaultITSName is the name of the ITS unless Options.ITSName says
	// otherwise.
	DefaultITSName = "its1"
	// DefaultHostingName is the name of the hosting space.
	DefaultHostingName = "hosting"
	// DefaultStartTimeout is how long Start and AddWDS wait, by default,
	// for a controller-manager to be ready.
	DefaultStartTimeout = 3 * time.Minute
	// stopTimeout is how long a controller-manager gets after each signal.
	stopTimeout = 10 * time.Second
	// portAttempts is how often a controller-manager (or, by StartStager,
	// a stager) is started when it fails because one of its ports was
	// taken meanwhile.
	portAttempts = 3
)

// Options configure Start.
type Options struct {
	// WDSes are the names of the WDSes to start. Default: wds1. More can be
	// added later with AddWDS.
	WDSes []string
	// ITSName is the name of the ITS. Default: DefaultITSName.
	ITSName string
	// Clusters are the WECs: one ManagedCluster each in the ITS, with
	// exactly these labels (as in the test/framework/kubestellar simulator).
	Clusters []kubestellar.Cluster
	// KSControllerManager is the path of KubeStellar's controller-manager
	// binary. Default: ControllerManagerBinary() ($STAGER_KS_CONTROLLER_MANAGER,
	// else `hack/tool.sh ks-controller-manager`).
	KSControllerManager string
	// ControllerManagerArgs are further arguments for every
	// controller-manager, such as "-v=4".
	ControllerManagerArgs []string
	// WorkDir receives the hosting space's kubeconfig and the
	// controller-managers' logs (ks-controller-manager-<wds>.log). Default: a
	// temporary directory that Stop removes.
	WorkDir string
	// WDSOptions are applied to every WDS space, such as
	// environment.WithStagerCRDs() or environment.WithScheme(...).
	// KubeStellar's own CRDs need no option: its controller-manager
	// installs them.
	WDSOptions []environment.SpaceOption
	// Logger receives the stack's progress and the errors of the simulated
	// WECs or of the status agents.
	Logger logr.Logger
	// StartTimeout bounds the wait for each controller-manager to be
	// ready. Default: DefaultStartTimeout.
	StartTimeout time.Duration
	// WECsInterval is the time between two passes of the simulated WECs
	// (default: DefaultWECsInterval) or, with RealDataPlane, of the status
	// agents (default: dataplane.DefaultStatusInterval).
	WECsInterval time.Duration
	// DataPlane selects what lies after KubeStellar's controller-manager.
	// Default: SimulatedDataPlane.
	DataPlane DataPlane
}

// DataPlane selects what lies after KubeStellar's controller-manager.
type DataPlane int

const (
	// SimulatedDataPlane runs no transport and no WEC: an in-process agent
	// (WECs) writes the WorkStatuses the WECs would report, with a status
	// the caller controls. It is fast and cheap, for the suites whose
	// subject is the stager and for the scale runs.
	SimulatedDataPlane DataPlane = iota
	// RealDataPlane runs, per WDS, KubeStellar's transport controller and
	// a garbage collector, and per cluster a WEC whose workloads really run
	// (test/framework/dataplane): ManifestWorks, OCM's work agent, kwok's
	// pods and the status they report. Only the status add-on is a
	// stand-in (dataplane.StatusAgent).
	RealDataPlane
)

// Stack is a running KubeStellar set-up started by Start. Stop it when done.
type Stack struct {
	// Hosting is the hosting space, holding the KubeFlex ControlPlanes and
	// the stager's MetricProviders.
	Hosting *environment.Space
	// ITS is the Inventory and Transport Space.
	ITS *environment.Space
	// WDS maps the name of each WDS to its space. AddWDS adds to it: do not
	// read it while AddWDS runs.
	WDS map[string]*environment.Space
	// WECs are the simulated WECs (and OCM status add-on); nil with
	// RealDataPlane.
	WECs *WECs
	// RealWECs are the WECs of a RealDataPlane stack, by cluster name.
	RealWECs map[string]*dataplane.WEC
	// ITSName is the name of the ITS (its ControlPlane's name).
	ITSName string
	// WorkDir holds the hosting kubeconfig and the controller-managers' logs.
	WorkDir string
	// HostingKubeconfig is the path of the hosting space's kubeconfig, the
	// one the controller-managers use.
	HostingKubeconfig string
	// StartedIn is how long Start took to start the spaces and have
	// KubeStellar ready.
	StartedIn time.Duration

	opts          Options
	removeWorkDir bool
	hostingClient client.Client

	mu       sync.Mutex
	managers map[string]*controllerManager
	// dataPlane are the transport controllers and garbage collectors of a
	// RealDataPlane stack, by the space they serve, stopped before the
	// spaces.
	dataPlane map[string][]*process.Process
	binaries  dataplane.Binaries
	itsConfig string               // the ITS's kubeconfig file, with RealDataPlane
	spaces    []*environment.Space // every space started, in order
	stopped   bool

	cancelWECs context.CancelFunc
	wecsDone   chan struct{}

	stopOnce sync.Once
	stopErr  error
}

// Start starts the hosting space, the ITS (with its inventory) and the WDSes,
// then one KubeStellar controller-manager per WDS and the WECs (simulated, or
// real with their data plane; see DataPlane). It
// returns once every controller-manager runs both its controllers and
// KubeStellar's CRDs are established in every WDS. On failure, everything
// started is stopped again. ctx bounds the start only.
func Start(ctx context.Context, o Options) (_ *Stack, err error) {
	if len(o.WDSes) == 0 {
		o.WDSes = []string{"wds1"}
	}
	if o.ITSName == "" {
		o.ITSName = DefaultITSName
	}
	if o.StartTimeout <= 0 {
		o.StartTimeout = DefaultStartTimeout
	}
	if o.Logger.GetSink() == nil {
		o.Logger = logr.Discard()
	}
	names := append([]string{DefaultHostingName, o.ITSName}, o.WDSes...)
	if dup := firstDuplicate(names); dup != "" {
		return nil, fmt.Errorf("space name %q is used twice (hosting space, ITS and WDSes need distinct names)", dup)
	}
	if _, err := environment.AssetsDir(); err != nil {
		return nil, err
	}
	if o.KSControllerManager == "" {
		if o.KSControllerManager, err = ControllerManagerBinary(); err != nil {
			return nil, err
		}
	} else if err := process.CheckExecutable(o.KSControllerManager); err != nil {
		return nil, fmt.Errorf("KubeStellar's controller-manager: %w; `make test` builds it (hack/tool.sh ks-controller-manager)", err)
	}
	kfDir, err := KubeFlexCRDDir()
	if err != nil {
		return nil, fmt.Errorf("locating KubeFlex's CRDs: %w", err)
	}
	mcDir, err := managedClusterCRDDir()
	if err != nil {
		return nil, fmt.Errorf("locating OCM's ManagedCluster CRD: %w", err)
	}

	s := &Stack{WDS: map[string]*environment.Space{}, ITSName: o.ITSName, opts: o, managers: map[string]*controllerManager{}}
	if s.WorkDir = o.WorkDir; s.WorkDir == "" {
		if s.WorkDir, err = os.MkdirTemp("", "kubestellar-stack-"); err != nil {
			return nil, fmt.Errorf("making a work directory: %w", err)
		}
		s.removeWorkDir = true
	} else if err := os.MkdirAll(s.WorkDir, 0o755); err != nil {
		return nil, fmt.Errorf("making the work directory: %w", err)
	}
	defer func() {
		if err != nil {
			err = errors.Join(err, s.Stop())
		}
	}()

	log := o.Logger.WithName("stack")
	log.Info("Starting the spaces", "hosting", DefaultHostingName, "its", o.ITSName, "wdses", o.WDSes)
	begin := time.Now()
	itsCRDs := []string{mcDir}
	if o.DataPlane == RealDataPlane {
		if s.binaries, err = dataplane.FindBinaries(); err != nil {
			return nil, err
		}
		workDir, err := dataplane.WorkCRDDir()
		if err != nil {
			return nil, err
		}
		itsCRDs = append(itsCRDs, workDir)
	}
	hostingCRDs, err := environment.HostingCRDDir()
	if err != nil {
		return nil, err
	}
	spaceOpts := map[string][]environment.SpaceOption{
		DefaultHostingName: {environment.WithCRDDirs(kfDir, hostingCRDs)},
		o.ITSName:          {environment.WithCRDDirs(itsCRDs...)},
	}
	for _, wds := range o.WDSes {
		spaceOpts[wds] = o.WDSOptions
	}
	started, err := s.startSpaces(names, spaceOpts)
	if err != nil {
		return nil, err
	}
	s.Hosting, s.ITS = started[0], started[1]
	log.Info("Spaces are up", "elapsed", time.Since(begin).Round(time.Millisecond))

	if s.hostingClient, err = client.New(s.Hosting.Config, client.Options{Scheme: environment.Scheme()}); err != nil {
		return nil, fmt.Errorf("making a client of the hosting space: %w", err)
	}
	itsClient, err := client.New(s.ITS.Config, client.Options{Scheme: environment.Scheme()})
	if err != nil {
		return nil, fmt.Errorf("making a client of the ITS: %w", err)
	}
	if s.HostingKubeconfig, err = writeHostingKubeconfig(s.WorkDir, s.Hosting); err != nil {
		return nil, err
	}
	if err := prepareITS(ctx, s.ITS, o.Clusters); err != nil {
		return nil, err
	}
	if err := RegisterControlPlane(ctx, s.hostingClient, o.ITSName, ControlPlaneTypeITS, s.ITS.Kubeconfig()); err != nil {
		return nil, err
	}

	if o.DataPlane == RealDataPlane {
		if err := s.startRealWECs(ctx, itsClient); err != nil {
			return nil, err
		}
	} else {
		s.WECs = newWECs(itsClient, o.Logger.WithName("wecs"), o.WECsInterval)
		wecsCtx, cancel := context.WithCancel(context.Background())
		s.cancelWECs, s.wecsDone = cancel, make(chan struct{})
		go func() {
			defer close(s.wecsDone)
			s.WECs.run(wecsCtx)
		}()
	}

	errs := make([]error, len(o.WDSes))
	var wg sync.WaitGroup
	for i, wds := range o.WDSes {
		wg.Go(func() { errs[i] = s.engageWDS(ctx, wds, started[2+i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	s.StartedIn = time.Since(begin)
	log.Info("KubeStellar is ready", "wdses", o.WDSes, "elapsed", s.StartedIn.Round(time.Millisecond))
	return s, nil
}

// AddWDS starts another WDS with its own KubeStellar controller-manager,
// registers it with KubeFlex's ControlPlane and makes the simulated WECs
// serve it (with RealDataPlane: starts its transport controller and garbage
// collector). It returns once KubeStellar is ready there. On failure, what it
// started is stopped again.
func (s *Stack) AddWDS(ctx context.Context, name string) (*environment.Space, error) {
	s.mu.Lock()
	stopped := s.stopped
	s.mu.Unlock()
	if stopped {
		return nil, errors.New("the stack is stopped")
	}
	taken := []string{DefaultHostingName, s.ITSName}
	for n := range s.WDS {
		taken = append(taken, n)
	}
	if slices.Contains(taken, name) || name == "" {
		return nil, fmt.Errorf("space name %q is empty or already used", name)
	}
	started, err := s.startSpaces([]string{name}, map[string][]environment.SpaceOption{name: s.opts.WDSOptions})
	if err == nil {
		err = s.engageWDS(ctx, name, started[0])
	}
	if err != nil {
		return nil, errors.Join(err, s.forget(name, started[0]))
	}
	return started[0], nil // started[0] is not nil: StartSpace succeeded
}

// forget stops and forgets the controller-manager and the space (if any) of
// a WDS that could not be added.
func (s *Stack) forget(name string, space *environment.Space) error {
	s.mu.Lock()
	cm := s.managers[name]
	delete(s.managers, name)
	s.spaces = slices.DeleteFunc(s.spaces, func(sp *environment.Space) bool { return sp == space })
	s.mu.Unlock()
	errs := []error{s.stopDataPlaneOf(name)}
	if cm != nil {
		errs = append(errs, cm.Stop())
	}
	if space != nil {
		errs = append(errs, space.Stop())
	}
	if s.hostingClient != nil {
		errs = append(errs, unregisterControlPlane(context.Background(), s.hostingClient, name))
	}
	return errors.Join(errs...)
}

// startSpaces starts the named spaces in parallel and records them for Stop.
func (s *Stack) startSpaces(names []string, opts map[string][]environment.SpaceOption) ([]*environment.Space, error) {
	spaces := make([]*environment.Space, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	for i, name := range names {
		wg.Go(func() { spaces[i], errs[i] = environment.StartSpace(name, opts[name]...) })
	}
	wg.Wait()
	s.mu.Lock()
	stopped := s.stopped
	if !stopped {
		for _, sp := range spaces {
			if sp != nil {
				s.spaces = append(s.spaces, sp)
			}
		}
	}
	s.mu.Unlock()
	if stopped { // Stop ran meanwhile: it did not see these
		for i, sp := range spaces {
			if sp != nil {
				errs = append(errs, sp.Stop())
				spaces[i] = nil
			}
		}
		errs = append(errs, errors.New("the stack was stopped meanwhile"))
	}
	return spaces, errors.Join(errs...)
}

// engageWDS registers a started WDS space, starts its controller-manager,
// waits until KubeStellar is ready there and hands it to the simulated WECs
// or starts its transport controller.
func (s *Stack) engageWDS(ctx context.Context, name string, space *environment.Space) error {
	log := s.opts.Logger.WithName("stack").WithValues("wds", name)
	begin := time.Now()
	if err := RegisterControlPlane(ctx, s.hostingClient, name, ControlPlaneTypeWDS, space.Kubeconfig()); err != nil {
		return err
	}
	wdsClient, err := client.New(space.Config, client.Options{Scheme: environment.Scheme()})
	if err != nil {
		return fmt.Errorf("making a client of %s: %w", name, err)
	}
	cm, err := s.startManager(ctx, name, wdsClient)
	if err != nil {
		return err
	}
	if s.opts.DataPlane == RealDataPlane {
		if err := s.startTransport(ctx, name, space); err != nil {
			return err
		}
	}
	s.mu.Lock()
	s.WDS[name] = space
	s.mu.Unlock()
	if s.WECs != nil {
		s.WECs.addWDS(name, wdsClient)
	}
	log.Info("KubeStellar's controller-manager is ready", "pid", cm.Pid(), "log", cm.LogPath(), "elapsed", time.Since(begin).Round(time.Millisecond))
	return nil
}

// startManager starts the controller-manager of a registered WDS (again
// when a port was taken meanwhile), records it for Stop and waits until it
// is ready and KubeStellar's CRDs are established in the WDS.
func (s *Stack) startManager(ctx context.Context, name string, wdsClient client.Client) (*controllerManager, error) {
	log := s.opts.Logger.WithName("stack").WithValues("wds", name)
	logPath := logName(s.WorkDir, "ks-controller-manager", name)
	var (
		cm  *controllerManager
		err error
	)
	for attempt := 1; ; attempt++ {
		if cm, err = startControllerManager(s.opts.KSControllerManager, s.HostingKubeconfig, name, s.ITSName, logPath, s.opts.ControllerManagerArgs); err != nil {
			return nil, err
		}
		s.mu.Lock()
		stopped := s.stopped
		if !stopped {
			s.managers[name] = cm
		}
		s.mu.Unlock()
		if stopped { // Stop ran meanwhile: it did not see this process
			return nil, errors.Join(errors.New("the stack was stopped meanwhile"), cm.Stop())
		}
		waitCtx, cancel := context.WithTimeout(ctx, s.opts.StartTimeout)
		err = cm.WaitReady(waitCtx)
		if err == nil {
			err = waitForKubeStellarCRDs(waitCtx, wdsClient, s.opts.StartTimeout)
			if err != nil {
				err = fmt.Errorf("KubeStellar's CRDs are not established in %s: %w", name, err)
			}
		}
		cancel()
		if err == nil {
			break
		}
		stopErr := cm.Stop()
		if cm.PortTaken() && attempt < portAttempts {
			log.Info("A port of KubeStellar's controller-manager was taken meanwhile; starting it again", "attempt", attempt)
			continue
		}
		return nil, errors.Join(err, stopErr)
	}
	return cm, nil
}

// ControllerManagerPid returns the process ID of the named WDS's running
// KubeStellar controller-manager, or 0 when none runs.
func (s *Stack) ControllerManagerPid(wds string) int {
	s.mu.Lock()
	cm := s.managers[wds]
	s.mu.Unlock()
	if cm == nil || cm.Exited() {
		return 0
	}
	return cm.Pid()
}

// StopControllerManager stops the named WDS's KubeStellar controller-manager
// (SIGTERM twice, then SIGKILL), as an outage of KubeStellar would: the WDS
// and its objects stay, the simulated WECs keep reporting, but no
// BindingPolicy becomes a Binding and no WorkStatus reaches a CombinedStatus
// until StartControllerManager.
func (s *Stack) StopControllerManager(wds string) error {
	s.mu.Lock()
	cm := s.managers[wds]
	s.mu.Unlock()
	if cm == nil {
		return fmt.Errorf("WDS %q has no controller-manager", wds)
	}
	return cm.Stop()
}

// StartControllerManager starts the named WDS's KubeStellar controller-manager
// again after StopControllerManager, appending to the same log, and returns
// once it is ready.
func (s *Stack) StartControllerManager(ctx context.Context, wds string) error {
	s.mu.Lock()
	cm, space := s.managers[wds], s.WDS[wds]
	s.mu.Unlock()
	if space == nil {
		return fmt.Errorf("WDS %q is not in the stack", wds)
	}
	if cm != nil && !cm.Exited() {
		return fmt.Errorf("KubeStellar's controller-manager for %s still runs (pid %d)", wds, cm.Pid())
	}
	wdsClient, err := client.New(space.Config, client.Options{Scheme: environment.Scheme()})
	if err != nil {
		return fmt.Errorf("making a client of %s: %w", wds, err)
	}
	_, err = s.startManager(ctx, wds, wdsClient)
	return err
}

// ControllerManagerLog returns the path of the log of the named WDS's
// controller-manager.
func (s *Stack) ControllerManagerLog(wds string) string {
	return logName(s.WorkDir, "ks-controller-manager", wds)
}

// Stop stops everything the stack started: the simulated WECs or the data
// plane (transport controllers, garbage collectors, WECs), every
// controller-manager (SIGTERM twice, then SIGKILL) and every space, then
// removes the work directory if Start made it. Calling it again is harmless.
func (s *Stack) Stop() error {
	s.stopOnce.Do(func() {
		s.mu.Lock()
		s.stopped = true
		managers := make([]*controllerManager, 0, len(s.managers))
		for _, cm := range s.managers {
			managers = append(managers, cm)
		}
		spaces := slices.Clone(s.spaces)
		s.mu.Unlock()

		if s.cancelWECs != nil {
			s.cancelWECs()
			<-s.wecsDone
		}
		errs := append(make([]error, len(managers)+len(spaces)), s.stopDataPlane())
		var wg sync.WaitGroup
		for i, cm := range managers {
			wg.Go(func() { errs[i] = cm.Stop() })
		}
		wg.Wait()
		for i, sp := range spaces {
			wg.Go(func() { errs[len(managers)+i] = sp.Stop() })
		}
		wg.Wait()
		if s.removeWorkDir {
			if err := os.RemoveAll(s.WorkDir); err != nil {
				errs = append(errs, fmt.Errorf("removing the work directory: %w", err))
			}
		}
		s.stopErr = errors.Join(errs...)
	})
	return s.stopErr
}

// firstDuplicate returns the first name that occurs twice, or "".
func firstDuplicate(names []string) string {
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			return n
		}
		seen[n] = true
	}
	return ""
}
