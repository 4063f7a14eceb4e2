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

package notify

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"pgregory.net/rapid"
)

// TestQueueIsBoundedAndDeliversInOrder: under random failures of the
// posts (each failing up to 3 times, under MaxAttempts), with offers made
// before and while the workers run, across two spaces and two
// destinations: no queue ever holds more than QueueLength; an offer is
// refused only when its queue is full; every accepted notice is delivered
// (posted successfully) exactly once per destination, in the order it was
// offered; and an offer of a notice already delivered posts nothing.
func TestQueueIsBoundedAndDeliversInOrder(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		bound := rapid.IntRange(1, 6).Draw(rt, "bound")
		type offer struct {
			space, dest string
			failures    int
		}
		offers := rapid.SliceOfN(rapid.Custom(func(rt *rapid.T) offer {
			return offer{space: rapid.SampledFrom([]string{"wds1", "wds2"}).Draw(rt, "space"),
				dest:     rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "dest"),
				failures: rapid.IntRange(0, 3).Draw(rt, "failures")}
		}), 1, 40).Draw(rt, "offers")
		before := rapid.IntRange(0, len(offers)).Draw(rt, "offers before the start")

		var mu sync.Mutex
		failuresLeft := map[Key]int{}
		posted := map[queueKey][]int64{}
		var violation error
		d := &Dispatcher{Options: Options{QueueLength: bound, MaxAttempts: 4, InitialBackoff: time.Nanosecond, MaxBackoff: time.Nanosecond}}
		d.init()
		d.post = func(_ context.Context, dest string, n Notice) error {
			if l := d.Len(n.Space, dest); l > bound {
				mu.Lock()
				violation = fmt.Errorf("queue %s/%s holds %d, bound %d", n.Space, dest, l, bound)
				mu.Unlock()
			}
			mu.Lock()
			defer mu.Unlock()
			k := Key{Destination: dest, UID: n.UID, Sequence: n.Sequence}
			if failuresLeft[k] > 0 {
				failuresLeft[k]--
				return errors.New("receiver down")
			}
			qk := queueKey{space: n.Space, destination: dest}
			posted[qk] = append(posted[qk], n.Sequence)
			return nil
		}
		accepted := map[queueKey][]int64{}
		offerOne := func(i int, o offer, started bool) {
			n := notice(int64(i + 1))
			n.Space = o.space
			k := Key{Destination: o.dest, UID: n.UID, Sequence: n.Sequence}
			mu.Lock()
			failuresLeft[k] = o.failures
			mu.Unlock()
			full := d.Len(o.space, o.dest) >= bound
			ok := d.Offer(o.dest, n)
			if !started && ok == full {
				rt.Fatalf("offer %d before the start: accepted %v with the queue full %v", i, ok, full)
			}
			if !ok && !full && !started {
				rt.Fatalf("offer %d refused below the bound", i)
			}
			if ok {
				qk := queueKey{space: o.space, destination: o.dest}
				accepted[qk] = append(accepted[qk], n.Sequence)
			}
		}
		for i, o := range offers[:before] {
			offerOne(i, o, false)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() {
			defer close(done)
			_ = d.Start(ctx)
		}()
		defer func() {
			cancel()
			<-done
		}()
		for i, o := range offers[before:] {
			offerOne(before+i, o, true)
		}
		for qk, seqs := range accepted {
			for _, seq := range seqs {
				deadline := time.Now().Add(time.Minute)
				for {
					settled, gaveUp := d.Outcome(qk.destination, notice(0).UID, seq)
					if settled {
						if gaveUp != "" {
							rt.Fatalf("notice %d to %s given up: %s", seq, qk.destination, gaveUp)
						}
						break
					}
					if time.Now().After(deadline) {
						rt.Fatalf("notice %d to %s not settled in a minute", seq, qk.destination)
					}
					time.Sleep(100 * time.Microsecond)
				}
			}
		}
		mu.Lock()
		defer mu.Unlock()
		if violation != nil {
			rt.Fatal(violation)
		}
		for qk, seqs := range accepted {
			if !slices.Equal(posted[qk], seqs) {
				rt.Fatalf("queue %v: posted %v, offered %v", qk, posted[qk], seqs)
			}
		}
		for qk, seqs := range posted {
			if len(accepted[qk]) == 0 && len(seqs) > 0 {
				rt.Fatalf("queue %v posted %v, offered none", qk, seqs)
			}
		}
		// Offered again, a delivered notice is not posted again.
		for qk, seqs := range accepted {
			n := notice(seqs[0])
			n.Space = qk.space
			d.Offer(qk.destination, n)
		}
		for qk, seqs := range accepted {
			if d.Len(qk.space, qk.destination) != 0 || len(posted[qk]) != len(seqs) {
				rt.Fatalf("queue %v: a delivered notice was queued again", qk)
			}
		}
	})
}
