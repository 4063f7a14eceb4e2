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

// Package wave carries the RolloutWaves of the stager's hosting cluster to
// and from the spaces this replica serves (docs/proposals/waves.md): a
// Reporter applies each served space's entry into the status of every wave
// that names the space, and Gates decides, from the waves as the hosting
// cluster's cache holds them, whether a policy may start a revision, and
// queues a space's ordered policies again when a wave changes in a way
// that may change that decision. What is decided lives in internal/wave,
// which is pure; this package only reads, writes and watches.
package wave
