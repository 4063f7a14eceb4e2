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

// Package kcp runs a real kcp server for tests and demos of the workload
// stager.
//
// Start runs one kcp (v0.28.0, built by `make test`, which names it in
// $STAGER_KCP) with its embedded etcd, listening on free loopback ports only,
// and waits until it is ready: about 30 s on a fresh root directory, less on
// a reused one. A Server gives rest.Configs, controller-runtime clients and
// kubeconfig files (all with kcp's admin credentials) for any workspace,
// named by its path ("root", "root:wds1") or its logical cluster ID, and
// creates and deletes workspaces. The kcp Go SDK is not used: kcp's own
// objects (Workspace, LogicalCluster) are handled as unstructured objects.
//
// Typical use:
//
//	srv, err := kcp.Start(ctx, kcp.Options{WorkDir: dir})
//	if err != nil { ... }
//	defer srv.Stop()
//	path, clusterID, err := srv.CreateWorkspace(ctx, kcp.RootPath, "wds1")
//	c, err := srv.Client(path)
package kcp

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/process"
)

const (
	// BinaryEnv is the environment variable that names the kcp binary.
	BinaryEnv = "STAGER_KCP"

	// RootPath is the path of kcp's root workspace.
	RootPath = "root"

	// DefaultStartTimeout bounds the wait for a kcp to become ready unless
	// Options.StartTimeout says otherwise.
	DefaultStartTimeout = 6 * time.Minute

	// stopTimeout is how long Stop waits after SIGTERM before SIGKILL; kcp
	// usually exits within 3 s.
	stopTimeout = 30 * time.Second
	// pollInterval is how often readiness and workspaces are checked.
	pollInterval = 250 * time.Millisecond
	// requestTimeout bounds one readiness probe.
	requestTimeout = 5 * time.Second
	// startAttempts is how many times Start tries fresh ports when one of
	// them was taken between choosing it and kcp binding it.
	startAttempts = 3
	// crashAttempts is how many times kcp is started on the same data when
	// it dies of a race at start (diedOfStartRace).
	crashAttempts = 3
	// maxLineLength is how many bytes of each of the last log lines
	// (process.TailLines) a failing kcp's error quotes.
	maxLineLength = 400
	// clustersPrefix starts the URL path of a workspace on a kcp server.
	clustersPrefix = "/clusters/"
)

// Binary returns the kcp binary named by $STAGER_KCP. It returns an error
// when the variable is unset or does not name an executable file; run
// `make test`, which builds kcp and sets the variable. Binary never
// downloads nor builds anything.
func Binary() (string, error) {
	path := os.Getenv(BinaryEnv)
	if path == "" {
		return "", fmt.Errorf("$%s is not set: run the tests through `make test`, which builds kcp and sets %s to its path", BinaryEnv, BinaryEnv)
	}
	info, err := os.Stat(path)
	if err != nil {
		return "", fmt.Errorf("$%s=%q does not name kcp (%w): run the tests through `make test`, which builds it", BinaryEnv, path, err)
	}
	if info.IsDir() || info.Mode().Perm()&0o111 == 0 {
		return "", fmt.Errorf("$%s=%q is not an executable file: run the tests through `make test`, which builds kcp", BinaryEnv, path)
	}
	return path, nil
}

// Options configure Start.
type Options struct {
	// WorkDir holds kcp's root directory, WorkDir/kcp (certificates, the
	// embedded etcd's data and admin.kubeconfig), and its log,
	// WorkDir/kcp.log, to which every start appends. It is required and
	// created when missing. A root directory left by an earlier kcp is
	// reused with its data.
	WorkDir string
	// Binary is the kcp binary to run; empty means Binary(), that is
	// $STAGER_KCP.
	Binary string
	// Scheme is the scheme of the clients made by Server.Client; nil means
	// client-go's. Unstructured objects work with any scheme.
	Scheme *runtime.Scheme
	// StartTimeout bounds the wait for kcp to become ready; zero means
	// DefaultStartTimeout.
	StartTimeout time.Duration
	// ExtraArgs are appended to the arguments of `kcp start`.
	ExtraArgs []string
	// Ports are the ports to listen on; zero means free ones chosen by
	// Start. Set them to start kcp on a copy of a root directory: kcp keeps
	// its URL, with the port, in the objects it stores (Workspace
	// spec.URL, APIExportEndpointSlice status.endpoints), so the copy is
	// served correctly only on the ports it was made with. Start fails,
	// naming the port, when one of them is taken.
	Ports Ports
}

// Ports are the loopback ports of a kcp: its API server's and its embedded
// etcd's.
type Ports struct {
	// API is the API server's (secure) port.
	API int `json:"api"`
	// EtcdClient and EtcdPeer are the embedded etcd's ports.
	EtcdClient int `json:"etcdClient"`
	EtcdPeer   int `json:"etcdPeer"`
}

// IsZero reports whether no port is set.
func (p Ports) IsZero() bool {
	return p == Ports{}
}

// list returns the ports as strings, in the order of freePorts.
func (p Ports) list() []string {
	return []string{strconv.Itoa(p.API), strconv.Itoa(p.EtcdClient), strconv.Itoa(p.EtcdPeer)}
}

// Server is a kcp started by Start. Its methods may be called concurrently,
// except Restart, which must not overlap with any other call.
type Server struct {
	// Kubeconfig is the admin kubeconfig that kcp writes at every start
	// (RootDir/admin.kubeconfig). Its current context is the root
	// workspace. kcp gives its kcp-admin user a new token at every start.
	Kubeconfig string
	// RootDir is kcp's --root-directory.
	RootDir string
	// Log is the file receiving kcp's output.
	Log string
	// URL is the base URL of the server, without any /clusters/ path:
	// https://127.0.0.1:<port>.
	URL string
	// Ports are the ports kcp listens on.
	Ports Ports

	binary       string
	args         []string
	scheme       *runtime.Scheme
	startTimeout time.Duration

	mu         sync.Mutex
	proc       *process.Process
	readyAfter time.Duration
	// raw is admin.kubeconfig as written by the running kcp.
	raw *clientcmdapi.Config
	// base has the admin credentials of raw and Host URL.
	base *rest.Config
}

// Start runs `kcp start` with its root directory in o.WorkDir, its embedded
// etcd, and free loopback ports for its API server and its etcd, and waits
// until kcp has written its admin kubeconfig and answers /readyz with 200.
// It fails, with the end of kcp's log, if kcp exits first or is not ready
// within o.StartTimeout; kcp is then stopped. Call Stop when done; kcp is
// also killed if this process dies.
func Start(ctx context.Context, o Options) (*Server, error) {
	if o.WorkDir == "" {
		return nil, errors.New("starting kcp: Options.WorkDir is required")
	}
	binary := o.Binary
	if binary == "" {
		var err error
		if binary, err = Binary(); err != nil {
			return nil, err
		}
	}
	workDir, err := filepath.Abs(o.WorkDir)
	if err != nil {
		return nil, fmt.Errorf("starting kcp: resolving work directory %s: %w", o.WorkDir, err)
	}
	if err := os.MkdirAll(workDir, 0o755); err != nil {
		return nil, fmt.Errorf("starting kcp: creating work directory: %w", err)
	}
	s := &Server{
		RootDir:      filepath.Join(workDir, "kcp"),
		Log:          filepath.Join(workDir, "kcp.log"),
		binary:       binary,
		scheme:       o.Scheme,
		startTimeout: o.StartTimeout,
	}
	s.Kubeconfig = filepath.Join(s.RootDir, "admin.kubeconfig")
	if s.scheme == nil {
		s.scheme = clientgoscheme.Scheme
	}
	if s.startTimeout <= 0 {
		s.startTimeout = DefaultStartTimeout
	}
	_, statErr := os.Stat(s.RootDir)
	fresh := errors.Is(statErr, fs.ErrNotExist)

	if !o.Ports.IsZero() {
		return s.startOnPorts(ctx, o.Ports, o.ExtraArgs)
	}
	var errs []error
	for range startAttempts {
		ports, err := freePorts(3)
		if err != nil {
			return nil, fmt.Errorf("starting kcp: %w", err)
		}
		s.setArgs(ports, o.ExtraArgs)
		retry, err := s.launch(ctx)
		if err == nil {
			return s, nil
		}
		errs = append(errs, err)
		if !retry {
			break
		}
		if fresh {
			// A half-initialised root directory cannot be started again: kcp
			// refuses to write admin.kubeconfig when its token store exists
			// without it.
			if err := os.RemoveAll(s.RootDir); err != nil {
				return nil, errors.Join(append(errs, fmt.Errorf("removing kcp's root directory before a new attempt: %w", err))...)
			}
		}
	}
	return nil, errors.Join(errs...)
}

// startOnPorts starts kcp on the given ports, once: other ports would not
// do, so a taken one is an error naming it.
func (s *Server) startOnPorts(ctx context.Context, ports Ports, extraArgs []string) (*Server, error) {
	if err := checkFree(ports); err != nil {
		return nil, fmt.Errorf("starting kcp on the ports of its data: %w", err)
	}
	s.setArgs(ports.list(), extraArgs)
	if _, err := s.launch(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// setArgs sets the URL, the ports and the arguments of `kcp start` for the
// given ports (API server, etcd client, etcd peer).
func (s *Server) setArgs(ports, extraArgs []string) {
	s.URL = "https://127.0.0.1:" + ports[0]
	api, _ := strconv.Atoi(ports[0])
	etcdClient, _ := strconv.Atoi(ports[1])
	etcdPeer, _ := strconv.Atoi(ports[2])
	s.Ports = Ports{API: api, EtcdClient: etcdClient, EtcdPeer: etcdPeer}
	s.args = append([]string{
		"start",
		"--root-directory=" + s.RootDir,
		"--kubeconfig-path=" + s.Kubeconfig,
		"--bind-address=127.0.0.1",
		"--secure-port=" + ports[0],
		"--embedded-etcd-client-port=" + ports[1],
		"--embedded-etcd-peer-port=" + ports[2],
	}, extraArgs...)
}

// ErrPortTaken means that a port kcp must listen on is in use.
var ErrPortTaken = errors.New("port taken")

// checkFree fails, naming the port, when one of ports is in use on the
// loopback address.
func checkFree(ports Ports) error {
	for _, port := range ports.list() {
		l, err := net.Listen("tcp", "127.0.0.1:"+port)
		if err != nil {
			return fmt.Errorf("%w: 127.0.0.1:%s (%w): stop what listens there, or start from fresh data", ErrPortTaken, port, err)
		}
		_ = l.Close()
	}
	return nil
}

// Restart stops kcp (if it still runs) and starts it again with the same
// arguments, root directory and ports, then waits until it is ready, as
// Start does. Its data survives; its kcp-admin token changes, so configs,
// clients and kubeconfigs obtained before Restart stop working: get new ones.
// Restart must not overlap with any other call on s.
func (s *Server) Restart(ctx context.Context) error {
	if err := s.Stop(); err != nil {
		return err
	}
	_, err := s.launch(ctx)
	return err
}

// Stop stops kcp with SIGTERM (SIGKILL if it is still there after 30 s) and
// waits until it has exited. Calling it again is harmless.
func (s *Server) Stop() error {
	p := s.process()
	if p == nil {
		return nil
	}
	if err := p.Stop(); err != nil {
		return fmt.Errorf("stopping kcp: %w", err)
	}
	return nil
}

// Kill kills kcp with SIGKILL, as a crash would, and waits until it has
// exited. Restart starts it again.
func (s *Server) Kill() error {
	p := s.process()
	if p == nil {
		return nil
	}
	if err := p.Kill(); err != nil {
		return fmt.Errorf("killing kcp: %w", err)
	}
	return nil
}

// Exited reports whether the kcp process has exited.
func (s *Server) Exited() bool {
	p := s.process()
	return p == nil || p.Exited()
}

// Process returns the running kcp process (a new one after Restart).
func (s *Server) Process() *process.Process {
	return s.process()
}

// ReadyAfter returns how long the last start (or restart) of kcp took,
// from launching the process until /readyz answered 200.
func (s *Server) ReadyAfter() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readyAfter
}

// Config returns a copy of the admin rest.Config for the workspace with the
// given path ("root", "root:wds1") or logical cluster ID: its Host is
// URL/clusters/<path>.
func (s *Server) Config(path string) *rest.Config {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := rest.CopyConfig(s.base)
	c.Host = s.URL + clustersPrefix + path
	return c
}

// Scheme is the scheme of the clients made by Client.
func (s *Server) Scheme() *runtime.Scheme { return s.scheme }

// Client returns a controller-runtime client with admin rights in the
// workspace with the given path or logical cluster ID, using the scheme of
// Options.Scheme.
func (s *Server) Client(path string) (client.Client, error) {
	c, err := client.New(s.Config(path), client.Options{Scheme: s.scheme})
	if err != nil {
		return nil, fmt.Errorf("creating a client for kcp workspace %s: %w", path, err)
	}
	return c, nil
}

// process returns the current kcp process.
func (s *Server) process() *process.Process {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.proc
}

// launch starts kcp with s.args and waits until it is ready, starting it
// again on the same data when it died of a race at start
// (diedOfStartRace). On failure it kills kcp and says whether trying again
// with other ports may help.
func (s *Server) launch(ctx context.Context) (retry bool, err error) {
	for attempt := 1; ; attempt++ {
		logged := logSize(s.Log)
		retry, err = s.launchOnce(ctx)
		if err == nil || attempt == crashAttempts || !diedOfStartRace(s.Log, logged) {
			return retry, err
		}
	}
}

// logSize is the size of the log at path, 0 if there is none.
func logSize(path string) int64 {
	info, err := os.Stat(path)
	if err != nil {
		return 0
	}
	return info.Size()
}

// diedOfStartRace reports whether the log at path, from offset on, shows
// kcp dead of a concurrent map access: kcp v0.28.0 compiles the
// ValidatingAdmissionPolicies of every workspace concurrently at start
// (k8s.io/apiserver v0.32.3's CEL DeclTypeProvider), and started on the
// data of a hundred workspaces that each hold config/approval's policy it
// died so once, with nothing wrong in its data: it is started again.
func diedOfStartRace(path string, offset int64) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, io.SeekStart); err != nil {
		return false
	}
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	return err == nil && bytes.Contains(data, []byte("fatal error: concurrent map"))
}

// launchOnce starts kcp once and waits until it is ready.
func (s *Server) launchOnce(ctx context.Context) (retry bool, err error) {
	// An admin kubeconfig left by an earlier kcp has a token that the new
	// one rejects: wait until the new kcp has written its own.
	previous, _ := os.ReadFile(s.Kubeconfig)
	began := time.Now()
	p, err := process.Start(process.Spec{Name: "kcp", Binary: s.binary, Args: s.args, LogPath: s.Log, StopTimeout: stopTimeout})
	if err != nil {
		return false, fmt.Errorf("starting kcp: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, s.startTimeout)
	defer cancel()
	if err := s.waitReady(ctx, p, began, previous); err != nil {
		exited := p.Exited()
		_ = p.Kill()
		return exited && p.PortTaken(),
			fmt.Errorf("kcp at %s %w; log %s ends with:\n%s", s.URL, err, s.Log, cutLines(p.Tail()))
	}
	s.mu.Lock()
	s.proc = p
	s.readyAfter = time.Since(began)
	s.mu.Unlock()
	return false, nil
}

// waitReady waits until kcp has written a new admin kubeconfig for s.URL
// (one modified after began or different from previous) and answers /readyz
// with 200 through it.
func (s *Server) waitReady(ctx context.Context, p *process.Process, began time.Time, previous []byte) error {
	var (
		httpClient *http.Client
		last       = "no new admin kubeconfig yet"
	)
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	for {
		if p.Exited() {
			return fmt.Errorf("exited before it was ready (%s)", last)
		}
		if httpClient == nil {
			if err := s.loadKubeconfig(began, previous); err != nil {
				last = err.Error()
			} else if httpClient, err = rest.HTTPClientFor(s.Config(RootPath)); err != nil {
				return fmt.Errorf("has an unusable admin kubeconfig %s: %w", s.Kubeconfig, err)
			}
		}
		if httpClient != nil {
			if err := probe(ctx, httpClient, s.URL+"/readyz"); err != nil {
				last = err.Error()
				if errors.Is(err, errUnauthorized) {
					httpClient = nil // read the kubeconfig again
				}
			} else {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("is not ready (%s): %w", last, context.Cause(ctx))
		case <-ticker.C:
		}
	}
}

// errUnauthorized means that kcp rejected the admin kubeconfig's token.
var errUnauthorized = errors.New("401 Unauthorized: the admin kubeconfig's token is rejected")

// probe GETs url and fails unless the answer is 200.
func probe(ctx context.Context, httpClient *http.Client, url string) error {
	ctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("making a request for %s: %w", url, err)
	}
	resp, err := httpClient.Do(req)
	if err != nil {
		return fmt.Errorf("GET %s: %w", url, err)
	}
	defer func() { _ = resp.Body.Close() }()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 2048))
	if resp.StatusCode == http.StatusUnauthorized {
		return fmt.Errorf("GET %s: %w", url, errUnauthorized)
	}
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	return nil
}

// loadKubeconfig reads the admin kubeconfig and keeps it if kcp wrote it
// after began (or it differs from previous) and it points at s.URL.
func (s *Server) loadKubeconfig(began time.Time, previous []byte) error {
	info, err := os.Stat(s.Kubeconfig)
	if err != nil {
		return fmt.Errorf("no admin kubeconfig yet: %w", err)
	}
	data, err := os.ReadFile(s.Kubeconfig)
	if err != nil {
		return fmt.Errorf("reading admin kubeconfig: %w", err)
	}
	if info.ModTime().Before(began) && bytes.Equal(data, previous) {
		return fmt.Errorf("admin kubeconfig %s is still the one of the previous kcp", s.Kubeconfig)
	}
	raw, err := clientcmd.Load(data)
	if err != nil {
		return fmt.Errorf("reading admin kubeconfig %s: %w", s.Kubeconfig, err)
	}
	cfg, err := clientcmd.NewDefaultClientConfig(*raw, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return fmt.Errorf("admin kubeconfig %s: %w", s.Kubeconfig, err)
	}
	if base := baseURL(cfg.Host); base != s.URL {
		return fmt.Errorf("admin kubeconfig %s is for %s, not %s", s.Kubeconfig, base, s.URL)
	}
	cfg.Host = s.URL
	cfg.QPS, cfg.Burst = 1000, 2000
	s.mu.Lock()
	s.raw, s.base = raw, cfg
	s.mu.Unlock()
	return nil
}

// baseURL strips the /clusters/<path> part, if any, off a kcp server URL.
func baseURL(server string) string {
	if i := strings.Index(server, clustersPrefix); i >= 0 {
		server = server[:i]
	}
	return strings.TrimSuffix(server, "/")
}

// freePorts returns n distinct loopback ports nobody listens on.
func freePorts(n int) ([]string, error) {
	// The listeners stay open until all ports are chosen, so that the
	// ports differ.
	var listeners []net.Listener
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	ports := make([]string, 0, n)
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("finding a free port: %w", err)
		}
		listeners = append(listeners, l)
		ports = append(ports, strconv.Itoa(l.Addr().(*net.TCPAddr).Port))
	}
	return ports, nil
}

// cutLines cuts each line of a log's tail to maxLineLength.
func cutLines(tail string) string {
	lines := strings.Split(tail, "\n")
	for i, line := range lines {
		if len(line) > maxLineLength {
			lines[i] = line[:maxLineLength] + "…"
		}
	}
	return strings.Join(lines, "\n")
}
