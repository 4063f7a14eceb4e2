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
	"context"
	"fmt"
	"testing"
	"time"
)

// PollInterval is how often Eventually and Consistently call their check.
const PollInterval = 50 * time.Millisecond

// Eventually calls check every PollInterval until it returns nil, and fails
// the test with check's last error if that does not happen within timeout.
// It returns how long that took.
func Eventually(t testing.TB, timeout time.Duration, what string, check func() error) time.Duration {
	t.Helper()
	began := time.Now()
	if err := Poll(context.Background(), PollInterval, timeout, what, check); err != nil {
		t.Fatal(err)
	}
	return time.Since(began)
}

// Consistently calls check every PollInterval for the whole duration d, and
// fails the test as soon as it returns an error.
func Consistently(t testing.TB, d time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for time.Now().Before(deadline) {
		if err := check(); err != nil {
			t.Fatalf("%s stopped holding: %v", what, err)
		}
		time.Sleep(PollInterval)
	}
}

// Poll calls check every interval until it returns nil, and returns an error
// naming what it waited for, with check's last error, if that does not
// happen within timeout or ctx is done first. It is Eventually for code
// that reports errors rather than failing a test (set-up helpers, benchmarks)
// or that must poll less often (a large environment).
func Poll(ctx context.Context, interval, timeout time.Duration, what string, check func() error) error {
	deadline := time.Now().Add(timeout)
	for {
		err := check()
		if err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w (last error: %w)", what, ctx.Err(), err)
		case <-time.After(interval):
		}
	}
}
