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

package dashboard

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"sort"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// fakeSource is a Source held in memory: the handler's unit tests fake
// only the WDSes.
type fakeSource struct {
	mu       sync.Mutex
	policies map[string][]v1alpha1.StagedBindingPolicy
	events   map[string][]corev1.Event
	listErr  map[string]error
	watchers map[string][]func(string)
}

func newFakeSource() *fakeSource {
	return &fakeSource{policies: map[string][]v1alpha1.StagedBindingPolicy{}, events: map[string][]corev1.Event{},
		listErr: map[string]error{}, watchers: map[string][]func(string){}}
}

func (f *fakeSource) Spaces() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for s := range f.policies {
		out = append(out, s)
	}
	sort.Strings(out)
	return out
}

func (f *fakeSource) List(_ context.Context, space string) ([]v1alpha1.StagedBindingPolicy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.listErr[space]; err != nil {
		return nil, err
	}
	var out []v1alpha1.StagedBindingPolicy
	for _, p := range f.policies[space] {
		out = append(out, *p.DeepCopy())
	}
	return out, nil
}

func (f *fakeSource) Get(_ context.Context, space, name string) (*v1alpha1.StagedBindingPolicy, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for _, p := range f.policies[space] {
		if p.Name == name {
			return p.DeepCopy(), nil
		}
	}
	return nil, apierrors.NewNotFound(schema.GroupResource{Group: v1alpha1.GroupVersion.Group, Resource: "stagedbindingpolicies"}, name)
}

func (f *fakeSource) Events(_ context.Context, space, name string) ([]corev1.Event, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]corev1.Event(nil), f.events[space+"/"+name]...), nil
}

func (f *fakeSource) Watch(ctx context.Context, space string, changed func(string)) error {
	f.mu.Lock()
	f.watchers[space] = append(f.watchers[space], changed)
	f.mu.Unlock()
	<-ctx.Done()
	return nil
}

// set adds or replaces a policy and tells the watchers.
func (f *fakeSource) set(space string, p v1alpha1.StagedBindingPolicy) {
	f.mu.Lock()
	list := f.policies[space]
	replaced := false
	for i := range list {
		if list[i].Name == p.Name {
			list[i], replaced = p, true
		}
	}
	if !replaced {
		list = append(list, p)
	}
	f.policies[space] = list
	watchers := append([]func(string){}, f.watchers[space]...)
	f.mu.Unlock()
	for _, w := range watchers {
		w(p.Name)
	}
}

// watching returns how many watches of the space are running.
func (f *fakeSource) watching(space string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.watchers[space])
}

// testAddress is the address the unit tests' servers say they listen on.
const testAddress = "127.0.0.1:3100"

// newTestServer returns a dashboard of src with opts.
func newTestServer(t *testing.T, src Source, opts Options) *Server {
	t.Helper()
	opts.Source = src
	if opts.Address == "" {
		opts.Address = testAddress
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// reply is what a test sees of a response served to a recorder.
type reply struct {
	StatusCode int
	Status     string
	Header     http.Header
	cookies    []*http.Cookie
}

// Cookies returns the cookies the response sets.
func (r reply) Cookies() []*http.Cookie { return r.cookies }

// replyOf returns what a test sees of the recorded response.
func replyOf(rec *httptest.ResponseRecorder) (reply, string) {
	res := rec.Result()
	defer func() { _ = res.Body.Close() }()
	return reply{StatusCode: res.StatusCode, Status: res.Status, Header: res.Header, cookies: res.Cookies()}, rec.Body.String()
}

// get serves a GET of target with the given Host and returns the response
// with its body.
func get(s *Server, target, host string, cookies ...*http.Cookie) (reply, string) {
	req := httptest.NewRequest(http.MethodGet, target, nil)
	req.Host = host
	for _, c := range cookies {
		req.AddCookie(c)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return replyOf(rec)
}

// session loads the overview and returns the session cookie and the CSRF
// token the page carries.
func session(t *testing.T, s *Server) (*http.Cookie, string) {
	t.Helper()
	resp, body := get(s, "/", testAddress)
	var cookie *http.Cookie
	for _, c := range resp.Cookies() {
		if c.Name == sessionCookie {
			cookie = c
		}
	}
	if cookie == nil {
		t.Fatalf("the overview set no session cookie: %v", resp.Header)
	}
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		t.Fatalf("the overview carries no CSRF token:\n%s", body)
	}
	return cookie, m[1]
}

// post serves a POST of form to /action with the given Host, Origin and
// cookie.
func post(s *Server, form url.Values, host, origin string, cookie *http.Cookie) (reply, string) {
	req := httptest.NewRequest(http.MethodPost, "/action", strings.NewReader(form.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Host = host
	if origin != "" {
		req.Header.Set("Origin", origin)
	}
	if cookie != nil {
		req.AddCookie(cookie)
	}
	rec := httptest.NewRecorder()
	s.ServeHTTP(rec, req)
	return replyOf(rec)
}
