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

package kubestellar

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
)

// PassLoop makes the passes of every simulated KubeStellar part (this
// package's Simulator, test/framework/stack's WECs): one at a time, every
// interval and whenever asked to resync, each converging the API servers
// towards what the part would make of them.
type PassLoop struct {
	what     string
	interval time.Duration
	pass     func(context.Context) error

	mu     sync.Mutex // serialises passes
	resync chan struct{}
	passes atomic.Int64
}

// NewPassLoop returns the loop of the part named what (in its log lines),
// making pass every interval.
func NewPassLoop(what string, interval time.Duration, pass func(context.Context) error) *PassLoop {
	return &PassLoop{what: what, interval: interval, pass: pass, resync: make(chan struct{}, 1)}
}

// SyncOnce makes one pass now, serialised with the loop's, and returns its
// errors.
func (l *PassLoop) SyncOnce(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	defer l.passes.Add(1)
	return l.pass(ctx)
}

// Resync asks the loop for a pass now rather than at the next tick.
func (l *PassLoop) Resync() {
	select {
	case l.resync <- struct{}{}:
	default:
	}
}

// Passes returns how many passes have completed (successfully or not).
func (l *PassLoop) Passes() int64 {
	return l.passes.Load()
}

// Run makes passes until ctx is done. A failed pass is logged once per
// distinct error, and its recovery once, and is retried by the next pass.
func (l *PassLoop) Run(ctx context.Context, log logr.Logger) {
	ticker := time.NewTicker(l.interval)
	defer ticker.Stop()
	lastErr := ""
	for {
		err := l.SyncOnce(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && err.Error() != lastErr:
			log.Error(err, l.what+": pass failed; retrying")
			lastErr = err.Error()
		case err == nil && lastErr != "":
			log.Info(l.what + ": pass succeeded again")
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-l.resync:
		}
	}
}
