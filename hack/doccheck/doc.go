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

// Package doccheck holds the checks of the documentation that no other
// package owns, for README.md, docs/ and config/: every relative link
// resolves (the file, and the heading an anchor names); every test a page
// names exists; the `kubectl get` and `kubectl stager get` columns a page
// shows are those the CRDs and the plugin print; the expressions a page
// shows compile; and docs/testing.md's layers are the Makefile's.
// docs/metrics.md is checked against the exported metrics in cmd/stager/app,
// and the flag reference against the stager's flag set in cmd/stager.
package doccheck
