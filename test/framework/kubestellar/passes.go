/*
Copyright 2026 The KubeStellar Authors.

Licensed under the Apache License, Version 2.0 (the "License");
you may not use this file except in compliance with the License.
You may obtain a copy of the License at

    http://www.apache.org/licenses/LICENSE-2.0

Unless required by applicable law or agreed to in writing, software
distributed under the License is distributed on an "AS IS" BASIS,
WITHOUT WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied.
See the License for the specific language governing permissions and
limitations under the License.
*/

package kubestellar

import (
	"context"
	"time"

	"github.com/go-logr/logr"
)

// RunPasses is the loop of every simulated KubeStellar part (this package's
// Simulator, test/framework/stack's WECs): it calls pass every interval and
// whenever resync receives, until ctx is done. A failed pass is logged once
// per distinct error, and its recovery once, and is retried by the next pass.
func RunPasses(ctx context.Context, log logr.Logger, what string, interval time.Duration, resync <-chan struct{}, pass func(context.Context) error) {
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	lastErr := ""
	for {
		err := pass(ctx)
		if ctx.Err() != nil {
			return
		}
		switch {
		case err != nil && err.Error() != lastErr:
			log.Error(err, what+": pass failed; retrying")
			lastErr = err.Error()
		case err == nil && lastErr != "":
			log.Info(what + ": pass succeeded again")
			lastErr = ""
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-resync:
		}
	}
}
