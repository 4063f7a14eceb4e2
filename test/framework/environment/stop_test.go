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
	"errors"
	"testing"

	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

func TestWithoutKilledAfterTimeout(t *testing.T) {
	timeout := errors.New("timeout waiting for process kube-apiserver to stop")
	killFailed := errors.New("unable to kill process /bin/etcd: operation not permitted")
	for _, tt := range []struct {
		name string
		err  error
		want string
	}{
		{"none", nil, ""},
		{"killed after the timeout", utilerrors.NewAggregate([]error{timeout}), ""},
		{"a failed kill stays", utilerrors.NewAggregate([]error{timeout, killFailed}), killFailed.Error()},
		{"a plain error stays", killFailed, killFailed.Error()},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := withoutKilledAfterTimeout(tt.err); err != nil {
				got = err.Error()
			}
			if got != tt.want {
				t.Errorf("withoutKilledAfterTimeout(%v) = %q, want %q", tt.err, got, tt.want)
			}
		})
	}
}
