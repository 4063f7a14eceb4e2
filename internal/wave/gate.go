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

// Package wave decides whether a RolloutWave lets one policy of one space
// start a revision (docs/proposals/waves.md). It is pure: it reads only
// the wave, as the hosting cluster holds it, and the time it is given, so
// that every replica, before and after a restart, decides alike, and Plan
// can take its Decision as one input of its Snapshot.
package wave

import (
	"fmt"
	"slices"
	"strings"
	"time"

	hostingv1alpha1 "github.com/kubestellar/workload-stager/api/hosting/v1alpha1"
	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/textcut"
)

// ConditionWaitingForWave is the condition of a policy that a wave holds:
// True, with the Decision's reason and message, while it is held.
const ConditionWaitingForWave = v1alpha1.ConditionWaitingForWave

// The reasons of a Decision.
const (
	// ReasonNotOrdered (released): no wave orders the policy in its space.
	ReasonNotOrdered = "NotOrdered"
	// ReasonFirstStep (released): the space is in the wave's first step.
	ReasonFirstStep = "FirstStep"
	// ReasonReleased (released): every earlier step completed the revision
	// and the step's soak has passed.
	ReasonReleased = "WaveReleased"
	// ReasonConflict (held): more than one wave orders the policy in its
	// space, so which steps come first is not known.
	ReasonConflict = "WaveConflict"
	// ReasonNeedsRevision (held): a policy in a step after the first has
	// no spec.revision, so no completion elsewhere can be matched to it.
	ReasonNeedsRevision = "WaveNeedsRevision"
	// ReasonEarlierStepFailed (held for the revision): an earlier step
	// gave the revision up (Aborted or Stalled).
	ReasonEarlierStepFailed = "EarlierStepFailed"
	// ReasonEarlierSpaceDown (held): a space of an earlier step is not
	// reporting: never reported, disengaged, or its report is stale.
	ReasonEarlierSpaceDown = "EarlierSpaceNotReporting"
	// ReasonWaitingForEarlierSteps (held): a space of an earlier step has
	// not completed the revision yet.
	ReasonWaitingForEarlierSteps = "WaitingForEarlierSteps"
	// ReasonSoaking (held): every earlier step completed the revision and
	// the step's soak has not passed yet.
	ReasonSoaking = "WaveSoaking"
)

// MaxMessage bounds a Decision's message, in bytes. It is far below a
// condition message's bound, as the message is repeated in Events.
const MaxMessage = 1024

// maxListed is how many spaces or waves a message names, the rest counted.
const maxListed = 8

// maxNameInMessage bounds each name a message quotes, in bytes.
const maxNameInMessage = 64

// Decision is whether a policy of a space may start a revision.
type Decision struct {
	// Released is true when the policy may start the revision.
	Released bool
	// Wave is the name of the wave that orders the policy ("" for none).
	Wave string
	// Step is the name of the policy's step, and StepIndex its position
	// (0-based) among Steps steps; -1 and 0 when no wave orders it.
	Step      string
	StepIndex int
	Steps     int
	// Reason and Message say why, for the policy's WaitingForWave
	// condition and Events. The message names the earlier spaces that
	// hold the policy with only their policy's phase and revision.
	Reason  string
	Message string
	// RecheckAfter, when positive, is when to decide again: the end of the
	// step's soak. Otherwise the decision changes only with the wave.
	RecheckAfter time.Duration
}

// Position returns the index of the step of w that holds space, and
// whether w orders policy in it.
func Position(w *hostingv1alpha1.RolloutWave, space, policy string) (int, bool) {
	if !slices.Contains(w.Spec.Policies, policy) {
		return -1, false
	}
	step := StepOf(w, space)
	return step, step >= 0
}

// StepOf returns the index of the first step of w that names space, or -1
// when none does.
func StepOf(w *hostingv1alpha1.RolloutWave, space string) int {
	for i := range w.Spec.Steps {
		if slices.Contains(w.Spec.Steps[i].Spaces, space) {
			return i
		}
	}
	return -1
}

// GateAll decides for the policy of the space among every wave of the
// hosting cluster: released when none orders it, held when more than one
// does (WaveConflict), else as Gate decides for the one that does.
func GateAll(waves []hostingv1alpha1.RolloutWave, space, policy, revision string, now time.Time) Decision {
	var ordering []int
	for i := range waves {
		if _, ok := Position(&waves[i], space, policy); ok {
			ordering = append(ordering, i)
		}
	}
	switch len(ordering) {
	case 0:
		return Decision{Released: true, StepIndex: -1, Reason: ReasonNotOrdered}
	case 1:
		return Gate(&waves[ordering[0]], space, policy, revision, now)
	}
	names := make([]string, len(ordering))
	for i, j := range ordering {
		names[i] = waves[j].Name
	}
	slices.Sort(names)
	return Decision{StepIndex: -1, Reason: ReasonConflict,
		Message: bound(fmt.Sprintf("policy %s of space %s is ordered by %d waves (%s): no revision starts until one wave orders it",
			policy, quoteName(space), len(names), list(names)))}
}

// Gate decides whether wave w lets policy, in space, start revision at
// now. Its rules, in order (the first that applies decides):
//  1. a policy the wave does not name, or a space in none of its steps,
//     is released (NotOrdered): the wave has no say;
//  2. a space of the first step is released (FirstStep): nothing comes
//     before it;
//  3. a policy without a revision ("") is held (WaveNeedsRevision);
//  4. a revision that any space of an earlier step gave up (its report of
//     the policy lists it in failedRevisions, or is Aborted or Stalled at
//     it) is held (EarlierStepFailed), whether that space still reports
//     or not, and whatever the other spaces report;
//  5. a space of an earlier step whose report is missing, disengaged, or
//     older (or, by clock skew, newer) than the wave's reportStaleAfter
//     holds the policy (EarlierSpaceNotReporting); so does, short of
//     that, a space whose policy is missing or whose current revision is
//     not the revision (WaitingForEarlierSteps); the message names every
//     such space, down ones first, with its policy's phase and revision;
//  6. within the step's soakDuration after the latest completion of the
//     revision in the earlier steps, or while a completion's time is not
//     reported, the policy is held (WaveSoaking), with RecheckAfter the
//     rest of the soak;
//  7. otherwise it is released (WaveReleased).
//
// Only the reports of spaces of earlier steps are read: the spaces of the
// policy's own step and of later steps never change the decision.
func Gate(w *hostingv1alpha1.RolloutWave, space, policy, revision string, now time.Time) Decision {
	step, ok := Position(w, space, policy)
	if !ok {
		return Decision{Released: true, StepIndex: -1, Reason: ReasonNotOrdered}
	}
	d := Decision{Wave: w.Name, Step: w.Spec.Steps[step].Name, StepIndex: step, Steps: len(w.Spec.Steps)}
	where := fmt.Sprintf("wave %s step %d/%d (%s)", w.Name, step+1, d.Steps, d.Step)
	if step == 0 {
		d.Released, d.Reason = true, ReasonFirstStep
		return d
	}
	if revision == "" {
		d.Reason = ReasonNeedsRevision
		d.Message = bound(fmt.Sprintf("%s orders revisions: set spec.revision for policy %s to roll out through it", where, policy))
		return d
	}

	earlier := earlierSpaces(w, step)
	reports := make(map[string]*hostingv1alpha1.WaveSpaceReport, len(w.Status.Spaces))
	for i := range w.Status.Spaces {
		reports[w.Status.Spaces[i].Space] = &w.Status.Spaces[i]
	}

	var failed []string
	for _, s := range earlier {
		if p := PolicyReport(reports[s], policy); p != nil && gaveUp(p, revision) {
			failed = append(failed, fmt.Sprintf("%s (%s %s)", quoteName(s), phase(p), p.Revision))
		}
	}
	if len(failed) > 0 {
		d.Reason = ReasonEarlierStepFailed
		d.Message = bound(fmt.Sprintf("%s: revision %s was given up in an earlier step, in %s; it never starts here: roll out a new revision",
			where, revision, list(failed)))
		return d
	}

	staleAfter := w.Spec.StaleAfter()
	var down, waiting []string
	var completed time.Time
	unknown := false // a completion without its time
	for _, s := range earlier {
		r := reports[s]
		switch {
		case r == nil:
			down = append(down, quoteName(s)+" (not reporting)")
			continue
		case !r.Engaged:
			down = append(down, quoteName(s)+" (disengaged)")
			continue
		case !Fresh(r.HeartbeatTime.Time, now, staleAfter):
			down = append(down, fmt.Sprintf("%s (no report since %s)", quoteName(s), r.HeartbeatTime.UTC().Format(time.RFC3339)))
			continue
		}
		p := PolicyReport(r, policy)
		switch {
		case p == nil:
			waiting = append(waiting, quoteName(s)+" (no policy "+policy+")")
		case p.CurrentRevision != revision:
			waiting = append(waiting, fmt.Sprintf("%s (%s %s)", quoteName(s), phase(p), p.Revision))
		case p.CompletedTime == nil:
			unknown = true
		case p.CompletedTime.After(completed):
			completed = p.CompletedTime.Time
		}
	}
	if len(down)+len(waiting) > 0 {
		d.Reason = ReasonWaitingForEarlierSteps
		if len(down) > 0 {
			d.Reason = ReasonEarlierSpaceDown
		}
		d.Message = bound(fmt.Sprintf("%s: waiting for revision %s to complete in %d of %d earlier spaces: %s",
			where, revision, len(down)+len(waiting), len(earlier), list(append(down, waiting...))))
		return d
	}

	if soak := soakOf(&w.Spec.Steps[step]); soak > 0 {
		if left := completed.Add(soak).Sub(now); unknown || left > 0 {
			d.Reason, d.RecheckAfter = ReasonSoaking, left
			if unknown {
				// No completion time reported: the soak cannot be timed,
				// so it waits for a report that has one.
				d.RecheckAfter = 0
				d.Message = bound(fmt.Sprintf("%s: revision %s completed in every earlier space; soaking %s from a completion time not yet reported",
					where, revision, soak))
				return d
			}
			d.Message = bound(fmt.Sprintf("%s: revision %s completed in every earlier space at %s; soaking %s, until %s",
				where, revision, completed.UTC().Format(time.RFC3339), soak, completed.Add(soak).UTC().Format(time.RFC3339)))
			return d
		}
	}
	d.Released, d.Reason = true, ReasonReleased
	d.Message = bound(fmt.Sprintf("%s: revision %s completed in every space of the %d earlier steps", where, revision, step))
	return d
}

// earlierSpaces lists the spaces of the steps before step, in order.
func earlierSpaces(w *hostingv1alpha1.RolloutWave, step int) []string {
	var spaces []string
	for _, s := range w.Spec.Steps[:step] {
		spaces = append(spaces, s.Spaces...)
	}
	return spaces
}

// PolicyReport returns the report of policy in r, or nil.
func PolicyReport(r *hostingv1alpha1.WaveSpaceReport, policy string) *hostingv1alpha1.WavePolicyReport {
	if r == nil {
		return nil
	}
	for i := range r.Policies {
		if r.Policies[i].Name == policy {
			return &r.Policies[i]
		}
	}
	return nil
}

// gaveUp reports whether p says its space gave revision up.
func gaveUp(p *hostingv1alpha1.WavePolicyReport, revision string) bool {
	if slices.Contains(p.FailedRevisions, revision) {
		return true
	}
	return p.Revision == revision && Failed(v1alpha1.RolloutPhase(p.Phase))
}

// Failed reports whether a rollout in phase has given its revision up, for
// the waves: Aborted, or Stalled (past its progressDeadline, over its
// failure budget, or held by a failed stage). A Stalled rollout may still
// complete, but a later step never starts a revision that stalled.
func Failed(phase v1alpha1.RolloutPhase) bool {
	return phase == v1alpha1.RolloutAborted || phase == v1alpha1.RolloutStalled
}

// Fresh reports whether a heartbeat at t is recent at now: no older, and,
// since another replica's clock wrote it, no newer than staleAfter.
func Fresh(t, now time.Time, staleAfter time.Duration) bool {
	age := now.Sub(t)
	return age <= staleAfter && age >= -staleAfter
}

// soakOf returns the step's soak, none when unset or negative.
func soakOf(s *hostingv1alpha1.WaveStep) time.Duration {
	if s.SoakDuration == nil || s.SoakDuration.Duration < 0 {
		return 0
	}
	return s.SoakDuration.Duration
}

// phase names p's phase, Pending when it has none yet.
func phase(p *hostingv1alpha1.WavePolicyReport) string {
	if p.Phase == "" {
		return string(v1alpha1.RolloutPending)
	}
	return p.Phase
}

// list joins at most maxListed items, counting the rest.
func list(items []string) string {
	if len(items) <= maxListed {
		return strings.Join(items, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:maxListed], ", "), len(items)-maxListed)
}

// quoteName cuts a space's name to maxNameInMessage bytes.
func quoteName(name string) string {
	return textcut.Cut(name, maxNameInMessage, "...")
}

// bound cuts a message to MaxMessage bytes.
func bound(message string) string {
	return textcut.Cut(message, MaxMessage, "...")
}
