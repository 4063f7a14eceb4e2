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

package environment

import (
	"context"
	"crypto/tls"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Fault is how a FaultProxy treats requests.
type Fault int

const (
	// Pass forwards every request.
	Pass Fault = iota
	// HangWrites holds every request that is not a GET until its client
	// gives up: an API server that accepts writes and never answers.
	// Reads and watches pass.
	HangWrites
	// Down cuts every request under way, watches included, and refuses every
	// new connection: an API server that is gone.
	Down
)

// FaultProxy stands between a client and a space's API server, as the
// identity of a user of the space, and can hang or cut the traffic on
// demand. Clients reach it with the kubeconfig from Kubeconfig.
type FaultProxy struct {
	server *httptest.Server
	addr   string

	mu       sync.Mutex
	fault    Fault
	changed  chan struct{} // closed and replaced when the fault changes
	inflight map[*http.Request]context.CancelFunc
}

// StartFaultProxy starts a proxy to the space's API server that forwards
// requests as the user with the given kubeconfig (see AddUser). It stops when
// Close is called.
func (s *Space) StartFaultProxy(userKubeconfig []byte) (*FaultProxy, error) {
	cfg, err := clientcmd.RESTConfigFromKubeConfig(userKubeconfig)
	if err != nil {
		return nil, fmt.Errorf("space %s: reading the user's kubeconfig: %w", s.Name, err)
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("space %s: the user's transport: %w", s.Name, err)
	}
	upstream, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, fmt.Errorf("space %s: parsing %q: %w", s.Name, cfg.Host, err)
	}
	p := &FaultProxy{changed: make(chan struct{}), inflight: map[*http.Request]context.CancelFunc{}}
	forward := httputil.NewSingleHostReverseProxy(upstream)
	forward.Transport = transport
	forward.FlushInterval = -1                    // stream watches as they come
	forward.ErrorLog = log.New(io.Discard, "", 0) // cut requests are the point
	p.server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.serve(w, r, forward)
	}))
	p.addr = p.server.Listener.Addr().String()
	return p, nil
}

// serve applies the fault to one request.
func (p *FaultProxy) serve(w http.ResponseWriter, r *http.Request, forward http.Handler) {
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	p.mu.Lock()
	fault, changed := p.fault, p.changed
	if fault != Down {
		p.inflight[r] = cancel
	}
	p.mu.Unlock()
	defer func() {
		p.mu.Lock()
		delete(p.inflight, r)
		p.mu.Unlock()
	}()

	switch {
	case fault == Down:
		drop(w)
		return
	case fault == HangWrites && r.Method != http.MethodGet:
		select {
		case <-ctx.Done():
			drop(w)
			return
		case <-changed:
			// The fault changed while the request hung: forward it now, as a
			// slow API server would eventually answer.
		}
	}
	forward.ServeHTTP(w, r.WithContext(ctx))
}

// drop closes the client's connection without an answer.
func drop(w http.ResponseWriter) {
	if hijacker, ok := w.(http.Hijacker); ok {
		if conn, _, err := hijacker.Hijack(); err == nil {
			_ = conn.Close()
			return
		}
	}
	http.Error(w, "the API server is down", http.StatusServiceUnavailable)
}

// Set changes the fault. Down cuts every request under way and closes the
// listener, so that new connections are refused; leaving Down listens again
// on the same address.
func (p *FaultProxy) Set(fault Fault) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	was := p.fault
	p.fault = fault
	close(p.changed)
	p.changed = make(chan struct{})
	switch {
	case fault == Down && was != Down:
		for r, cancel := range p.inflight {
			cancel()
			delete(p.inflight, r)
		}
		_ = p.server.Listener.Close()
		p.server.CloseClientConnections()
	case fault != Down && was == Down:
		l, err := net.Listen("tcp", p.addr)
		if err != nil {
			return fmt.Errorf("listening again on %s: %w", p.addr, err)
		}
		p.server.Listener = tls.NewListener(l, p.server.TLS)
		go func() { _ = p.server.Config.Serve(p.server.Listener) }()
	}
	return nil
}

// Kubeconfig returns a kubeconfig that reaches the space through the proxy.
// The proxy authenticates upstream; the token here only fills the field.
func (p *FaultProxy) Kubeconfig() ([]byte, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["proxy"] = &clientcmdapi.Cluster{
		Server:                   p.server.URL,
		CertificateAuthorityData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: p.server.Certificate().Raw}),
	}
	cfg.AuthInfos["proxy"] = &clientcmdapi.AuthInfo{Token: "through-the-proxy"}
	cfg.Contexts["proxy"] = &clientcmdapi.Context{Cluster: "proxy", AuthInfo: "proxy"}
	cfg.CurrentContext = "proxy"
	return clientcmd.Write(*cfg)
}

// Close stops the proxy.
func (p *FaultProxy) Close() {
	if err := p.Set(Pass); err == nil {
		p.server.Close()
	}
}
