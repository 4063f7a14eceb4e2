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

package expression

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	apitypes "k8s.io/apimachinery/pkg/types"
)

// A process started with workerEnv set is a worker from its first moment:
// the check is in an init function, not in main, so that every binary that
// links the engine, test binaries with or without a TestMain included, can
// serve as its own worker and never runs its own main or tests as one. The
// package's init functions in files named after this one do not run in a
// worker: keep any the engine needs in files named before it.
func init() {
	if config, ok := os.LookupEnv(workerEnv); ok {
		os.Exit(serveWorker(config, os.NewFile(3, "requests"), os.NewFile(4, "responses")))
	}
}

// serveWorker runs a worker: it caps its own memory, says it is ready on
// out, and evaluates each request read from in until in ends. It returns
// the process's exit code.
func serveWorker(configJSON string, in io.Reader, out io.Writer) int {
	var c workerConfig
	if err := json.Unmarshal([]byte(configJSON), &c); err != nil {
		fmt.Fprintf(os.Stderr, "evaluation worker: reading its configuration: %v\n", err)
		return 2
	}
	if err := setWorkerLimits(c.Memory); err != nil {
		fmt.Fprintf(os.Stderr, "evaluation worker: %v\n", err)
		return 2
	}
	// The collector works harder as the cap nears, so that only what is
	// live, not garbage, runs into it.
	debug.SetMemoryLimit(int64(c.Memory) * 3 / 4)
	engine, err := NewEngine(WithCostLimit(c.CostLimit), WithEstimatedCostLimit(c.EstimatedCostLimit),
		WithEvalTimeout(c.EvalTimeout), WithCacheSize(c.CacheSize), WithConversionCacheBytes(c.ConversionBytes))
	if err != nil {
		fmt.Fprintf(os.Stderr, "evaluation worker: %v\n", err)
		return 2
	}
	w := bufio.NewWriter(out)
	encoder := json.NewEncoder(w)
	if err := encoder.Encode(workerReady{Ready: true, PID: os.Getpid()}); err != nil || w.Flush() != nil {
		return 2
	}
	decoder := json.NewDecoder(bufio.NewReader(in))
	// A worker ends, once it has answered, when what it maps has grown by
	// half its allowance: the Go runtime keeps its address space, and the
	// caches grow, so a worker's headroom would otherwise depend on what
	// it evaluated before. Its pool starts another.
	start, err := mapped()
	if err != nil {
		fmt.Fprintf(os.Stderr, "evaluation worker: %v\n", err)
		return 2
	}
	retireAt := start + c.Memory/2
	for answers := 1; ; answers++ {
		var req evalRequest
		if err := decoder.Decode(&req); err != nil {
			if errors.Is(err, io.EOF) {
				return 0
			}
			fmt.Fprintf(os.Stderr, "evaluation worker: reading a request: %v\n", err)
			return 2
		}
		res := engine.serve(&req)
		now, err := mapped()
		if err == nil && now > start+c.Memory/4 {
			// What the evaluation left is garbage: collect it now, so
			// that the next one reuses its space instead of mapping more.
			runtime.GC()
			now, err = mapped()
		}
		res.Retiring = err != nil || now > retireAt || c.RetireAfter > 0 && answers >= c.RetireAfter
		if err := encoder.Encode(res); err != nil || w.Flush() != nil {
			return 2
		}
		if res.Retiring {
			return 0
		}
	}
}

// serve evaluates one request in this process.
func (e *Engine) serve(req *evalRequest) evalResponse {
	failed := func(err error) evalResponse {
		var e *Error
		if errors.As(err, &e) {
			res := evalResponse{Reason: e.Reason}
			if e.Err != nil {
				res.Cause = e.Err.Error()
			}
			return res
		}
		return evalResponse{Reason: ReasonEvaluationError, Cause: err.Error()}
	}
	prog, err := e.Compile(req.Kind, req.Source)
	if err != nil {
		return failed(err)
	}
	var vars *evalVars
	switch req.Kind {
	case KindFilter:
		if req.Clause == nil {
			return failed(errors.New("no clause given"))
		}
		vars = filterVars(req.Clause.celView())
	case KindCondition:
		if req.Status == nil {
			conv, ok := prog.conversions.cached(apitypes.UID(req.StatusUID), req.StatusVersion)
			if !ok {
				return evalResponse{NeedStatus: true}
			}
			vars = conditionVars(conv.obj)
			break
		}
		var cs ksv1alpha1.CombinedStatus
		if err := json.Unmarshal(*req.Status, &cs); err != nil {
			return failed(fmt.Errorf("decoding the CombinedStatus: %w", err))
		}
		conv, err := prog.conversions.of(&cs)
		if err != nil {
			return failed(err)
		}
		vars = conditionVars(conv.obj)
	case KindAnalysis:
		vars = analysisValues(req.Values)
	case KindWebAnalysis:
		if req.Answer == nil {
			return failed(errors.New("no answer given"))
		}
		if vars, err = webVars(*req.Answer); err != nil {
			return failed(err)
		}
	}
	// The timeout counts from here, as it does in the stager's process:
	// compiling, decoding and converting are the engine's work, not the
	// expression's, and the pool's kill leaves a second for them.
	result, cost, err := prog.run(vars, evalLimits{deadline: time.Now().Add(req.Timeout), allowance: req.Allowance}, 0)
	if err != nil {
		res := failed(err)
		res.Cost = cost
		return res
	}
	return evalResponse{Result: result, Cost: cost}
}
