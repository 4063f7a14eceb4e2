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

package providers

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubestellar/workload-stager/providers/kcp"
	"github.com/kubestellar/workload-stager/providers/kubeconfig"
	"github.com/kubestellar/workload-stager/providers/kubeflex"
	"github.com/kubestellar/workload-stager/providers/single"
)

func TestOptionsValidate(t *testing.T) {
	tests := []struct {
		name   string
		change func(*Options)
		// wantFlags are the flags the error must name; none means valid.
		wantFlags []string
	}{
		{name: "defaults", change: func(*Options) {}},
		{name: "single with defaults", change: func(o *Options) { o.Kind = KindSingle }},
		{name: "single ignores the kubeconfig flags",
			change: func(o *Options) {
				o.Kind = KindSingle
				o.Kubeconfig.Namespace, o.Kubeconfig.Label, o.Kubeconfig.Key = "", "", ""
			}},
		{name: "kubeconfig ignores the single space name",
			change: func(o *Options) { o.Single.Name = "" }},
		{name: "kubeconfig without namespace",
			change:    func(o *Options) { o.Kubeconfig.Namespace = "" },
			wantFlags: []string{"--kubeconfig-namespace"}},
		{name: "kubeconfig without label",
			change:    func(o *Options) { o.Kubeconfig.Label = "" },
			wantFlags: []string{"--kubeconfig-label"}},
		{name: "kubeconfig without key",
			change:    func(o *Options) { o.Kubeconfig.Key = "" },
			wantFlags: []string{"--kubeconfig-key"}},
		{name: "kubeconfig without namespace, label and key: all named",
			change: func(o *Options) {
				o.Kubeconfig.Namespace, o.Kubeconfig.Label, o.Kubeconfig.Key = "", "", ""
			},
			wantFlags: []string{"--kubeconfig-namespace", "--kubeconfig-label", "--kubeconfig-key"}},
		{name: "single without name",
			change:    func(o *Options) { o.Kind, o.Single.Name = KindSingle, "" },
			wantFlags: []string{"--single-space-name"}},
		{name: "unknown provider",
			change:    func(o *Options) { o.Kind = "cluster-api" },
			wantFlags: []string{"--provider", `"cluster-api"`}},
		{name: "kcp with defaults", change: func(o *Options) { o.Kind = KindKCP }},
		{name: "kcp without endpoint slice",
			change:    func(o *Options) { o.Kind, o.KCP.EndpointSlice = KindKCP, "" },
			wantFlags: []string{"--kcp-apiexport-endpointslice"}},
		{name: "kubeconfig ignores the kcp endpoint slice", change: func(o *Options) { o.KCP.EndpointSlice = "" }},
		{name: "kubeconfig and kcp together", change: func(o *Options) { o.Kind = "kubeconfig,kcp" }},
		{name: "single and kcp, with spaces", change: func(o *Options) { o.Kind = " kcp, single " }},
		{name: "single cannot join kubeconfig",
			change:    func(o *Options) { o.Kind = "single,kubeconfig" },
			wantFlags: []string{"--provider", `"single" with "kubeconfig"`}},
		{name: "several providers: each one's flags are checked",
			change: func(o *Options) {
				o.Kind = "kubeconfig,kcp"
				o.Kubeconfig.Key, o.KCP.EndpointSlice = "", ""
			},
			wantFlags: []string{"--kubeconfig-key", "--kcp-apiexport-endpointslice"}},
		{name: "a provider named twice",
			change:    func(o *Options) { o.Kind = "kcp,kcp" },
			wantFlags: []string{"--provider", `"kcp" twice`}},
		{name: "an unknown provider among known ones",
			change:    func(o *Options) { o.Kind = "kubeconfig,kpc" },
			wantFlags: []string{"--provider", `"kpc"`}},
		{name: "only commas",
			change:    func(o *Options) { o.Kind = " , " },
			wantFlags: []string{"--provider"}},
		{name: "empty provider",
			change:    func(o *Options) { o.Kind = "" },
			wantFlags: []string{"--provider"}},
		{name: "kubeflex with defaults", change: func(o *Options) { o.Kind = KindKubeFlex }},
		{name: "kubeflex and kubeconfig together", change: func(o *Options) { o.Kind = "kubeconfig,kubeflex" }},
		{name: "kubeflex without selector",
			change:    func(o *Options) { o.Kind, o.KubeFlex.Selector = KindKubeFlex, "" },
			wantFlags: []string{"--kubeflex-selector"}},
		{name: "kubeflex with a selector that does not parse",
			change:    func(o *Options) { o.Kind, o.KubeFlex.Selector = KindKubeFlex, "cptype in (wds" },
			wantFlags: []string{"--kubeflex-selector"}},
		{name: "kubeflex with an unknown key choice",
			change:    func(o *Options) { o.Kind, o.KubeFlex.KubeconfigKey = KindKubeFlex, "internal" },
			wantFlags: []string{"--kubeflex-kubeconfig-key"}},
		{name: "kubeconfig ignores the kubeflex flags",
			change: func(o *Options) { o.KubeFlex.Selector, o.KubeFlex.KubeconfigKey = "", "" }},
		{name: "provider names are case-sensitive",
			change:    func(o *Options) { o.Kind = "Single" },
			wantFlags: []string{"--provider", `"Single"`}},
	}
	allFlags := []string{"--provider", "--kubeconfig-namespace", "--kubeconfig-label", "--kubeconfig-key", "--single-space-name",
		"--kcp-apiexport-endpointslice", "--kubeflex-selector", "--kubeflex-kubeconfig-key"}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := NewOptions()
			tt.change(o)
			err := o.Validate()
			if len(tt.wantFlags) == 0 {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want an error naming %v", tt.wantFlags)
			}
			for _, flag := range tt.wantFlags {
				if !strings.Contains(err.Error(), flag) {
					t.Errorf("Validate() = %q, does not name %s", err, flag)
				}
			}
			for _, flag := range allFlags {
				named := false
				for _, want := range tt.wantFlags {
					named = named || want == flag
				}
				if !named && strings.Contains(err.Error(), flag+" ") {
					t.Errorf("Validate() = %q, also blames %s, which is fine", err, flag)
				}
			}
		})
	}
}

func TestNewOptionsDefaults(t *testing.T) {
	// The kubeconfig Secrets are labelled and keyed as multicluster-runtime's
	// kubeconfig provider has them (TestDefaultsAreMulticlusterRuntimes), so
	// that Secrets made for it serve.
	want := &Options{
		Kind:   KindKubeconfig,
		Single: &single.Flags{Name: "local"},
		Kubeconfig: &kubeconfig.Flags{Namespace: "kubestellar-stager",
			Label: kubeconfig.DefaultLabel, Key: kubeconfig.DefaultKey},
		KubeFlex: &kubeflex.Flags{Selector: "kflex.kubestellar.io/cptype=wds", KubeconfigKey: "auto", Resync: 30 * time.Second},
		KCP:      &kcp.Flags{EndpointSlice: kcp.DefaultEndpointSlice},
	}
	if got := NewOptions(); !reflect.DeepEqual(got, want) {
		t.Errorf("NewOptions() = %+v, want %+v", got, want)
	}
}

func TestAddFlags(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		want    func(*Options)
		wantErr bool
	}{
		{name: "no flags keep the defaults",
			want: func(*Options) {}},
		{name: "single",
			args: []string{"--provider=single", "--single-space-name=hub"},
			want: func(o *Options) { o.Kind, o.Single.Name = KindSingle, "hub" }},
		{name: "every kubeconfig flag",
			args: []string{"--provider", "kubeconfig", "--kubeconfig-namespace", "spaces",
				"--kubeconfig-label=example.com/space", "--kubeconfig-key=config"},
			want: func(o *Options) {
				o.Kubeconfig.Namespace, o.Kubeconfig.Label, o.Kubeconfig.Key = "spaces", "example.com/space", "config"
			}},
		{name: "empty value is taken as given",
			args: []string{"--kubeconfig-namespace="},
			want: func(o *Options) { o.Kubeconfig.Namespace = "" }},
		{name: "kcp flags",
			args: []string{"--provider=kubeconfig,kcp", "--kcp-kubeconfig=/etc/kcp/provider.kubeconfig",
				"--kcp-apiexport-endpointslice=stager"},
			want: func(o *Options) {
				o.Kind, o.KCP.Kubeconfig, o.KCP.EndpointSlice = "kubeconfig,kcp", "/etc/kcp/provider.kubeconfig", "stager"
			}},
		{name: "unknown flag",
			args:    []string{"--kubeconfig=/tmp/x"},
			wantErr: true},
		{name: "flag without value",
			args:    []string{"--provider"},
			wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
			fs.SetOutput(&strings.Builder{})
			o := NewOptions()
			o.AddFlags(fs)
			err := fs.Parse(tt.args)
			if tt.wantErr {
				if err == nil {
					t.Fatalf("Parse(%v) = nil, want an error", tt.args)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%v) = %v", tt.args, err)
			}
			want := NewOptions()
			tt.want(want)
			if !reflect.DeepEqual(o, want) {
				t.Errorf("after Parse(%v), options = %+v, want %+v", tt.args, o, want)
			}
		})
	}

	// Each flag shows its default.
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	NewOptions().AddFlags(fs)
	for flag, def := range map[string]string{
		"provider":                    KindKubeconfig,
		"kubeconfig-namespace":        kubeconfig.DefaultNamespace,
		"kubeconfig-label":            kubeconfig.DefaultLabel,
		"kubeconfig-key":              kubeconfig.DefaultKey,
		"single-space-name":           single.DefaultName,
		"kcp-kubeconfig":              "",
		"kcp-apiexport-endpointslice": kcp.DefaultEndpointSlice,
	} {
		f := fs.Lookup(flag)
		if f == nil {
			t.Errorf("flag --%s is not registered", flag)
			continue
		}
		if f.DefValue != def || f.Usage == "" {
			t.Errorf("flag --%s: default %q, usage %q; want default %q and a usage", flag, f.DefValue, f.Usage, def)
		}
	}
}
