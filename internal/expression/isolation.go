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
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"time"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
)

// This file contains what an expression can make cel-go do. The cost
// limit, the charges before a call and the timeout bound what an
// evaluation may do as far as the engine knows every function; three
// reviews in a row found functions that ran or allocated past their
// charge. With isolation, an evaluation that the cost bound of bound.go
// does not cover runs in a worker process: a copy of the running binary
// whose address space is capped (so that an allocation past the cap ends
// the worker, not the stager) and which is killed when it overruns its
// deadline (so that a call that is never interrupted ends too). The
// worker's outcome is this process's: the same Program code runs there on
// the same input.

const (
	// DefaultWorkerMemory is the default address space a worker may grow
	// by beyond what it has when it starts.
	DefaultWorkerMemory uint64 = 192 << 20
	// workerGrace is how long past its deadline an evaluation may take
	// before its worker is killed: the worker's own timeout stops a
	// comprehension within deadlineResolution, so only a call that cannot
	// be interrupted runs this long, or a worker the machine's load keeps
	// from running, which a shorter grace would kill for nothing.
	workerGrace = time.Second
	// DefaultWorkerWait is how long an evaluation waits for a free worker
	// by default.
	DefaultWorkerWait = 10 * time.Second
	// workerCacheSize bounds the programs a worker keeps compiled, which
	// take its memory.
	workerCacheSize = 128
)

// Isolation configures evaluation in worker processes (see WithIsolation).
type Isolation struct {
	// Workers is how many worker processes stay ready (default
	// GOMAXPROCS).
	Workers int
	// MaxWorkers is how many worker processes may evaluate at once
	// (default 4 × Workers): while every worker is busy, an evaluation
	// that has waited 50 ms starts an extra one, which ends after it.
	MaxWorkers int
	// Memory is how much a worker's address space may grow past its size
	// when it is ready (default DefaultWorkerMemory); a worker that needs
	// more dies, and the evaluation fails with ReasonMemoryLimitExceeded.
	Memory uint64
	// Wait is how long an evaluation waits for a free worker (default
	// DefaultWorkerWait). The wait does not count against the evaluation's
	// timeout or its budget's time.
	Wait time.Duration
	// OnWorkerStopped, if set, is called when a worker ends other than by
	// the engine's Close: why is "timeout", "memory" or "exited".
	OnWorkerStopped func(why string)

	// retireAfter, when above 0, retires a worker after that many answers,
	// as its memory would: for tests.
	retireAfter int
}

// WithIsolation makes the engine evaluate expressions in worker processes,
// re-executions of the running binary (see ServeWorker). A condition that
// the sizes of its CombinedStatus bound within the cost limit (costBound)
// is still evaluated in this process: its values are parts of the input or
// no larger than them, so no call can build or walk more than the input.
func WithIsolation(iso Isolation) Option {
	return func(c *config) error {
		if iso.Workers < 0 {
			return fmt.Errorf("isolation workers must not be negative, got %d", iso.Workers)
		}
		if iso.Workers == 0 {
			iso.Workers = runtime.GOMAXPROCS(0)
		}
		if iso.MaxWorkers < iso.Workers {
			iso.MaxWorkers = 4 * iso.Workers
		}
		if iso.Memory == 0 {
			iso.Memory = DefaultWorkerMemory
		}
		if iso.Wait <= 0 {
			iso.Wait = DefaultWorkerWait
		}
		c.isolation = &iso
		return nil
	}
}

// evalRequest is what a worker evaluates: one program on one input.
type evalRequest struct {
	Kind   Kind
	Source string
	// Timeout is how long the evaluation may take from when the worker
	// reads the request; Allowance is the budget's time when the budget's
	// deadline set it (for the error's words).
	Timeout, Allowance time.Duration
	// One input, by Kind. A CombinedStatus with a UID and a
	// resourceVersion is sent by those alone first: the worker answers
	// NeedStatus unless it has that version converted already.
	Clause                   *Clause          `json:",omitempty"`
	StatusUID, StatusVersion string           `json:",omitempty"`
	Status                   *json.RawMessage `json:",omitempty"`
	Values                   []float64        `json:",omitempty"`
	Answer                   *json.RawMessage `json:",omitempty"`
}

// evalResponse is a worker's outcome of an evalRequest.
type evalResponse struct {
	Result bool
	Cost   uint64
	// Reason is empty when the evaluation succeeded; Cause is the error's
	// underlying cause.
	Reason ErrorReason `json:",omitempty"`
	Cause  string      `json:",omitempty"`
	// NeedStatus asks for the request again with its CombinedStatus.
	NeedStatus bool `json:",omitempty"`
	// Retiring says that the worker ends after this answer.
	Retiring bool `json:",omitempty"`
}

// isolated evaluates req, whose Timeout and Allowance it sets, in a worker
// within budget b (nil for none) and returns the outcome as eval does.
// status, if not nil, gives the CombinedStatus a worker asks for.
func (p *Program) isolated(req evalRequest, b *Budget, status func() (*json.RawMessage, error)) (bool, error) {
	if b != nil {
		if why := b.exhausted(time.Now()); why != "" {
			return false, newError(p.kind, p.source, ReasonBudgetExhausted, errors.New(why))
		}
	}
	// A worker that ended before the request reached it is no fault of
	// the evaluation's: it goes to another, once. Nor is a worker that
	// ran out of memory after other evaluations: what the Go runtime
	// keeps mapped of them is not the evaluation's, which goes to a fresh
	// worker, once, and fails for memory only there.
	notSent, fresh := false, false
	for {
		result, err := p.isolatedOnce(req, b, status, fresh)
		switch {
		case errors.Is(err, errNotSent) && !notSent:
			notSent = true
		case errors.Is(err, errOutOfMemoryAfterOthers) && !fresh:
			fresh = true
		default:
			return result, err
		}
	}
}

// errOutOfMemoryAfterOthers is an evaluation's worker running out of
// memory when it had answered other evaluations before.
var errOutOfMemoryAfterOthers = errors.New("the worker ran out of memory after other evaluations")

// isolatedOnce is one attempt of isolated, on one worker, a fresh one if
// asked.
func (p *Program) isolatedOnce(req evalRequest, b *Budget, status func() (*json.RawMessage, error), fresh bool) (bool, error) {
	w, waited, err := p.workers.acquire(fresh)
	if err != nil {
		return false, newError(p.kind, p.source, ReasonEvaluationError, err)
	}
	defer func() {
		if w != nil {
			p.workers.release(w)
		}
	}()
	if b != nil {
		// Waiting for a worker is not evaluating.
		b.deadline = b.deadline.Add(waited)
	}
	now := time.Now()
	l, err := p.limits(b, now)
	if err != nil {
		return false, err
	}
	req.Kind, req.Source, req.Timeout, req.Allowance = p.kind, p.source, l.deadline.Sub(now), l.allowance
	used := w.evaluations > 0
	res, stopped, err := w.evaluate(&req, l.deadline.Add(workerGrace))
	if err == nil && stopped == nil && res.NeedStatus && status != nil {
		if req.Status, err = status(); err != nil {
			return false, newError(p.kind, p.source, ReasonEvaluationError, err)
		}
		if res.Retiring {
			// The worker ends once it has answered: the request, with
			// its status, goes to another.
			w.retiring = true
			p.workers.release(w)
			if w, waited, err = p.workers.acquire(fresh); err != nil {
				w = nil
				return false, newError(p.kind, p.source, ReasonEvaluationError, err)
			}
			if b != nil {
				b.deadline = b.deadline.Add(waited)
			}
		}
		used = w.evaluations > 0
		req.Timeout = time.Until(l.deadline)
		res, stopped, err = w.evaluate(&req, l.deadline.Add(workerGrace))
	}
	if err != nil {
		return false, newError(p.kind, p.source, ReasonEvaluationError, err)
	}
	if res.Retiring {
		w.retiring = true
	}
	if stopped != nil {
		if stopped.why == "memory" && used && !fresh {
			return false, errOutOfMemoryAfterOthers
		}
		if b != nil {
			b.spent += p.costLimit
		}
		return false, newError(p.kind, p.source, stopped.reason(), stopped.cause(p, l))
	}
	if b != nil {
		b.spent += res.Cost
	}
	if res.Reason != "" {
		return false, newError(p.kind, p.source, res.Reason, errors.New(res.Cause))
	}
	return res.Result, nil
}

// isolatedCondition evaluates the condition on cs in a worker.
func (p *Program) isolatedCondition(cs *ksv1alpha1.CombinedStatus, b *Budget) (bool, error) {
	status := func() (*json.RawMessage, error) {
		data, err := json.Marshal(cs)
		if err != nil {
			return nil, fmt.Errorf("encoding CombinedStatus %s/%s for the evaluation's worker: %w", cs.Namespace, cs.Name, err)
		}
		raw := json.RawMessage(data)
		return &raw, nil
	}
	req := evalRequest{StatusUID: string(cs.UID), StatusVersion: cs.ResourceVersion}
	if req.StatusUID == "" || req.StatusVersion == "" {
		raw, err := status()
		if err != nil {
			return false, newError(p.kind, p.source, ReasonEvaluationError, err)
		}
		req.StatusUID, req.StatusVersion, req.Status = "", "", raw
	}
	return p.isolated(req, b, status)
}

// workerStop says why a worker ended during an evaluation.
type workerStop struct {
	// why is "timeout", "memory", "exited" or "closed" (by the engine's
	// Close).
	why string
	// detail is the worker's exit status and last words.
	detail string
	memory uint64
}

func (s *workerStop) reason() ErrorReason {
	switch s.why {
	case "timeout":
		return ReasonTimeout
	case "memory":
		return ReasonMemoryLimitExceeded
	}
	return ReasonEvaluationError
}

func (s *workerStop) cause(p *Program, l evalLimits) error {
	switch {
	case s.why == "timeout" && l.allowance != 0:
		return fmt.Errorf("the evaluations of this run had taken their whole budget of %s, and its worker process, which did not stop, was killed", l.allowance)
	case s.why == "timeout":
		return fmt.Errorf("still running at the evaluation timeout of %s, its worker process was killed", p.evalTimeout)
	case s.why == "memory":
		return fmt.Errorf("its worker process ran out of the %d MiB an evaluation may use", s.memory>>20)
	case s.why == "closed":
		return errors.New("the expression engine was closed")
	}
	return fmt.Errorf("its worker process ended: %s", s.detail)
}
