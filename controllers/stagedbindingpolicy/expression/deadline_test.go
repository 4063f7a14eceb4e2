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
	"context"
	"errors"
	"testing"
	"time"
)

// TestDeadlineContexts checks that a deadline context is done at its
// deadline and not before, that one released before its deadline is reused
// open and done at its new deadline, and that an expired one is not reused.
func TestDeadlineContexts(t *testing.T) {
	var _ context.Context = (*deadlineContext)(nil)

	start := time.Now()
	c := withDeadline(start.Add(time.Hour))
	if d, ok := c.Deadline(); !ok || !d.Equal(start.Add(time.Hour)) {
		t.Errorf("Deadline() = %v, %v; want an hour from now", d, ok)
	}
	if c.Err() != nil {
		t.Fatalf("a context an hour from its deadline is done: %v", c.Err())
	}
	c.release()

	// The pool may or may not hand c back; either way the context must
	// be open until its new deadline and done at it.
	soon := withDeadline(time.Now().Add(20 * time.Millisecond))
	if soon.Err() != nil {
		t.Fatalf("a fresh context is done before its deadline: %v", soon.Err())
	}
	select {
	case <-soon.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("a context 20ms from its deadline was not done 10s later")
	}
	if !errors.Is(soon.Err(), context.DeadlineExceeded) {
		t.Errorf("Err() = %v after the deadline, want context.DeadlineExceeded", soon.Err())
	}
	soon.release()

	for range 100 {
		next := withDeadline(time.Now().Add(time.Hour))
		if next == soon {
			t.Fatal("an expired context was handed out again")
		}
		if next.Err() != nil {
			t.Fatalf("a reused context is done: %v", next.Err())
		}
		next.release()
	}
}
