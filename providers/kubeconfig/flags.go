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

package kubeconfig

import (
	"errors"

	"github.com/spf13/pflag"
)

// Defaults of the flags.
const (
	// DefaultNamespace is where kubeconfig Secrets are looked for.
	DefaultNamespace = "kubestellar-stager"
	// DefaultLabel marks a Secret as a space's kubeconfig (with value "true").
	DefaultLabel = "sigs.k8s.io/multicluster-runtime-kubeconfig"
	// DefaultKey is the data key of the kubeconfig in a Secret.
	DefaultKey = "kubeconfig"
)

// Flags are the command-line flags of the kubeconfig provider, and of the
// guard every kubeconfig a space is reached by goes through (KubeFlex's too).
type Flags struct {
	// Namespace is the namespace of the kubeconfig Secrets.
	Namespace string
	// Label (with value "true") marks a kubeconfig Secret.
	Label string
	// Key is the key of the kubeconfig in a Secret's data.
	Key string
	// InsecureExec lets kubeconfigs run exec credential plugins inside the
	// stager.
	InsecureExec bool
	// InsecureTLS lets kubeconfigs skip the verification of the server's
	// certificate, or use plain http servers.
	InsecureTLS bool
}

// NewFlags returns Flags with their defaults.
func NewFlags() *Flags {
	return &Flags{Namespace: DefaultNamespace, Label: DefaultLabel, Key: DefaultKey}
}

// AddFlags registers the flags: AddSecretFlags and the guard's.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	f.AddSecretFlags(fs)
	fs.BoolVar(&f.InsecureExec, "insecure-kubeconfig-exec", f.InsecureExec,
		"let kubeconfigs run exec credential plugins inside the stager, that is let whoever writes them run commands as the stager")
	fs.BoolVar(&f.InsecureTLS, "insecure-kubeconfig-tls", f.InsecureTLS,
		"let kubeconfigs use insecure-skip-tls-verify or plain http servers")
}

// AddSecretFlags registers the flags that say where the kubeconfig Secrets
// are, without the guard's: a reader of the registrations (kubectl stager)
// never loosens the guard.
func (f *Flags) AddSecretFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Namespace, "kubeconfig-namespace", f.Namespace,
		"namespace of the hosting cluster holding the spaces' kubeconfig Secrets")
	fs.StringVar(&f.Label, "kubeconfig-label", f.Label,
		`label (value "true") that marks a Secret as a space's kubeconfig, the space being named after the Secret`)
	fs.StringVar(&f.Key, "kubeconfig-key", f.Key,
		"key of the kubeconfig in a space Secret's data")
}

// Validate reports flags that cannot work, for when the provider serves.
func (f *Flags) Validate() error {
	var errs []error
	if f.Namespace == "" {
		errs = append(errs, errors.New("--kubeconfig-namespace must not be empty"))
	}
	if f.Label == "" {
		errs = append(errs, errors.New("--kubeconfig-label must not be empty"))
	}
	if f.Key == "" {
		errs = append(errs, errors.New("--kubeconfig-key must not be empty"))
	}
	return errors.Join(errs...)
}

// Policy is what kubeconfigs may use, as the flags say.
func (f *Flags) Policy() Policy {
	return Policy{AllowExec: f.InsecureExec, AllowInsecureTLS: f.InsecureTLS}
}
