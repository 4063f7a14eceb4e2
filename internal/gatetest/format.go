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

// Package gatetest reads and runs offline tests of a StagedBindingPolicy's
// gates: GateTest files (a file format of `kubectl stager test`, not a
// CRD) naming a policy, a stage, recorded or hand-written inputs and the
// outcome expected. It judges them with the controller's own functions
// (rollout.JudgeGates), engine and limits, and reads no clock and no
// cluster: the files are read through an fs.FS rooted at the test file's
// directory, within byte caps.
package gatetest

import (
	"encoding/json"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubestellar/workload-stager/internal/rollout"
)

// The kind and apiVersion of a GateTest file.
const (
	Kind       = "GateTest"
	APIVersion = "test.community.kubestellar.io/v1alpha1"
)

// File is a GateTest file as written.
type File struct {
	// Kind is GateTest.
	Kind string `json:"kind"`
	// APIVersion is test.community.kubestellar.io/v1alpha1.
	APIVersion string `json:"apiVersion"`
	// Policy is a file holding the StagedBindingPolicy, relative to the
	// test file's directory.
	Policy string `json:"policy,omitempty"`
	// PolicyRef names a StagedBindingPolicy to read from the WDS instead.
	PolicyRef *PolicyRef `json:"policyRef,omitempty"`
	// Cases are the test's cases.
	Cases []Case `json:"cases"`
}

// PolicyRef names a StagedBindingPolicy of the WDS.
type PolicyRef struct {
	// Name is the policy's name.
	Name string `json:"name"`
}

// Case is one case of a GateTest: a stage, its inputs, what to expect.
type Case struct {
	// Name says what the case shows.
	Name string `json:"name"`
	// Stage is the stage whose gates are judged.
	Stage string `json:"stage"`
	// Now is the time of the judgement; the analyses' answers without a
	// time are taken a second apart, the last at Now.
	Now *metav1.Time `json:"now,omitempty"`
	// Inputs are what the gates read.
	Inputs Inputs `json:"inputs"`
	// Expect is the verdict expected.
	Expect Expect `json:"expect"`
}

// Inputs are the files (relative to the test file's directory) and inline
// answers a case's gates read.
type Inputs struct {
	// CombinedStatuses are YAML files of KubeStellar CombinedStatuses, one
	// per document.
	CombinedStatuses []string `json:"combinedStatuses,omitempty"`
	// Binding is a YAML file of the stage's KubeStellar Binding; without
	// it the stage waits for its Binding.
	Binding string `json:"binding,omitempty"`
	// Analyses are the answers to each analysis's query, by analysis name.
	Analyses map[string]AnalysisInput `json:"analyses,omitempty"`
}

// AnalysisInput is the answers of one analysis: a file or inline.
type AnalysisInput struct {
	// File is a YAML file holding an Answers document.
	File string `json:"file,omitempty"`
	// Answers are inline answers, oldest first.
	Answers []Answer `json:"answers,omitempty"`
}

// Answers is the content of an analysis answers file.
type Answers struct {
	// Answers are the answers, oldest first.
	Answers []Answer `json:"answers"`
}

// Answer is one answer to an analysis's query, as the MetricProvider gave
// it: the sample values, or the error that stood for it.
type Answer struct {
	// Time is when the query was sent (optional).
	Time *metav1.Time `json:"time,omitempty"`
	// Values are the samples' values.
	Values []float64 `json:"values,omitempty"`
	// Answer is a web analysis's JSON answer.
	Answer json.RawMessage `json:"answer,omitempty"`
	// Error says why there was no answer.
	Error string `json:"error,omitempty"`
}

// Expect is the verdict a case expects.
type Expect struct {
	// Outcome is Done, NotDone, Failed, Inconclusive or Blocked.
	Outcome rollout.GateOutcome `json:"outcome"`
	// Reason, when set, must equal the verdict's reason.
	Reason string `json:"reason,omitempty"`
	// Message, when set, must be a substring of the verdict's message.
	Message string `json:"message,omitempty"`
}

// outcomes are the outcomes a case may expect.
var outcomes = []rollout.GateOutcome{rollout.GateDone, rollout.GateNotDone, rollout.GateFailed,
	rollout.GateInconclusive, rollout.GateBlocked}

// toAnswers converts answers as written into the controller's.
func toAnswers(in []Answer) []rollout.GateAnswer {
	out := make([]rollout.GateAnswer, 0, len(in))
	for _, a := range in {
		var t time.Time
		if a.Time != nil {
			t = a.Time.Time
		}
		out = append(out, rollout.GateAnswer{Time: t, Values: a.Values, Answer: a.Answer, Error: a.Error})
	}
	return out
}
