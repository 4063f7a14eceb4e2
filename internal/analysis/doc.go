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

// Package analysis takes the measurements of stage analyses: it renders an
// analysis's PromQL query with the stage's context and sends it to the
// MetricProvider the analysis names, through an HTTP client that the
// platform team's provider, not the policy, configures, and that bounds
// what the answer can cost the stager.
//
// What a measurement means for the rollout (its verdict, the analysis's
// phase, the stage's fate) is decided in package rollout, from the values
// recorded here; this package only reaches out.
package analysis
