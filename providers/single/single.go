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

// Package single finds one space: the hosting cluster itself, named by a
// flag. internal/providers/single engages it through multicluster-runtime's
// single provider.
package single

import (
	"errors"

	"github.com/spf13/pflag"
)

// DefaultName is the space name of the hosting cluster.
const DefaultName = "local"

// Flags are the command-line flags of the single provider.
type Flags struct {
	// Name is the space name of the hosting cluster.
	Name string
}

// NewFlags returns Flags with their defaults.
func NewFlags() *Flags {
	return &Flags{Name: DefaultName}
}

// AddFlags registers the flags.
func (f *Flags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&f.Name, "single-space-name", f.Name, "name of the hosting cluster's space with --provider=single")
}

// Validate reports flags that cannot work, for when the provider serves.
func (f *Flags) Validate() error {
	if f.Name == "" {
		return errors.New("--single-space-name must not be empty")
	}
	return nil
}
