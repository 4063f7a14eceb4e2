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

package app

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/term"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// ANSI sequences of the live view on a terminal.
const (
	clearScreen = "\x1b[H\x1b[2J"
	colourReset = "\x1b[0m"
	colourGreen = "\x1b[32m"
	colourBlue  = "\x1b[34m"
	colourCyan  = "\x1b[36m"
	colourRed   = "\x1b[31m"
	colourDim   = "\x1b[2m"
	colourBold  = "\x1b[1m"
)

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// watch redraws the live view of the policies every interval until ctx
// ends: on a terminal it clears the screen and colours the marks; otherwise
// it prints each view that differs from the one before, as plain text.
func (o *options) watch(ctx context.Context, targets []target, names []string, interval time.Duration, all bool) error {
	tty := isTerminal(o.streams.Out)
	last := ""
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		view, err := o.readView(ctx, targets, names, tty, all)
		switch {
		case ctx.Err() != nil:
			return nil
		case err != nil:
			// A live view outlives a passing error (an API server restarting):
			// say so and read again at the next tick.
			fprintf(o.streams.ErrOut, "%s: %v\n", clock(o.now()), err)
		case view != last:
			switch {
			case tty:
				fmt.Fprint(o.streams.Out, clearScreen+view)
			case last != "":
				fmt.Fprint(o.streams.Out, "\n"+view)
			default:
				fmt.Fprint(o.streams.Out, view)
			}
			last = view
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// readView reads the named policies (every policy without names) of the
// targets and renders their live view.
func (o *options) readView(ctx context.Context, targets []target, names []string, tty, all bool) (string, error) {
	found, err := o.collect(ctx, targets, names, all)
	if err != nil {
		return "", err
	}
	return o.liveView(ctx, found, tty, all)
}

// liveView renders every policy as a block: a line with its name, phase and
// reason, then one line per stage with its mark, its clusters and what it
// says. Off a terminal times are absolute (UTC), so a view changes only when
// the rollout does; on one, the soak and the deadline also count down.
func (o *options) liveView(ctx context.Context, found []located, tty, all bool) (string, error) {
	paint := func(colour, s string) string {
		if !tty {
			return s
		}
		return colour + s + colourReset
	}
	var b strings.Builder
	for i := range found {
		p, c := &found[i].policy, found[i].client
		if i > 0 {
			b.WriteString("\n")
		}
		phase := string(p.Status.Phase)
		if phase == "" {
			phase = string(v1alpha1.RolloutPending)
		}
		phaseColour := colourBlue
		switch p.Status.Phase {
		case v1alpha1.RolloutCompleted:
			phaseColour = colourGreen
		case v1alpha1.RolloutBlocked, v1alpha1.RolloutStalled, v1alpha1.RolloutAborted:
			phaseColour = colourRed
		case v1alpha1.RolloutAwaitingApproval, v1alpha1.RolloutSuspended:
			phaseColour = colourCyan
		}
		title := p.Name
		if all {
			title = printable(found[i].space) + "/" + p.Name
		}
		fmt.Fprintf(&b, "%s  %s", paint(colourBold, title), paint(phaseColour, printable(phase)))
		if reason := reasonShown(p).Reason; reason != "" {
			fprintf(&b, "  %s", reason)
		}
		if revisioned(p) {
			fprintf(&b, "  revision %s", revisionSummary(p))
		}
		b.WriteString(waveTitle(p))
		b.WriteString("\n")
		width := 0
		for _, s := range p.Spec.Stages {
			width = max(width, len(s.Name))
		}
		for _, s := range p.Spec.Stages {
			line, err := o.stageLine(ctx, c, p, s, tty)
			if err != nil {
				return "", err
			}
			name := fmt.Sprintf("%-*s", width, s.Name)
			if revisioned(p) {
				name += "  " + padRunes(printable(stageRevision(p, s.Name)), revisionWidth(p))
			}
			fmt.Fprintf(&b, "  %s %s  %s\n", paint(line.colour, line.mark), name,
				strings.TrimRight(printable(line.clusters)+"  "+printable(line.note), " "))
		}
	}
	return b.String(), nil
}

// stageView is one stage's line of the live view.
type stageView struct {
	mark, colour, clusters, note string
}

// stageLine renders one stage: its mark, the clusters its Binding places
// the workload on (while its BindingPolicy exists) and what it says. On a
// terminal, the soak and the deadline also say how long is left.
func (o *options) stageLine(ctx context.Context, c client.Client, p *v1alpha1.StagedBindingPolicy, s v1alpha1.Stage, tty bool) (stageView, error) {
	until := func(what string, t time.Time) string {
		if tty {
			return fmt.Sprintf("%s %s (%s)", what, left(t, o.now()), clock(t))
		}
		return what + " at " + clock(t)
	}
	view := stageView{mark: markPending, colour: colourDim, clusters: "-"}
	record := p.Status.StageNamed(s.Name)
	if record == nil || record.Phase == v1alpha1.StagePending {
		if s.Approval == v1alpha1.ApprovalRequired {
			view.note = "needs approval"
		}
		return view, nil
	}
	if record.Phase == v1alpha1.StageActive || record.Phase == v1alpha1.StageSucceeded {
		objs, err := readStage(ctx, c, p, s.Name)
		if err != nil {
			return view, err
		}
		if names := clusters(objs.binding); len(names) > 0 {
			view.clusters = strings.Join(names, ",")
		}
	}
	var notes []string
	if record.Clusters != nil {
		view.clusters = batchSummary(record.Clusters)
		if failed := failedClusters(record.Clusters); len(failed) > 0 {
			notes = append(notes, "failed: "+strings.Join(failed, ", "))
		}
	}
	switch record.Phase {
	case v1alpha1.StageSucceeded:
		view.mark, view.colour = markSucceeded, colourGreen
		if record.CompletionTime != nil {
			notes = append(notes, "done at "+clock(record.CompletionTime.Time))
		}
	case v1alpha1.StageSkipped:
		view.mark, view.colour = markSkipped, colourDim
		notes = append(notes, "skipped")
	case v1alpha1.StageAwaitingApproval:
		view.mark, view.colour = markAwaiting, colourCyan
		note := "awaits approval"
		if record.ApprovalRequestedTime != nil {
			note += " since " + clock(record.ApprovalRequestedTime.Time)
		}
		notes = append(notes, note+": kubectl stager approve "+p.Name)
	case v1alpha1.StageActive:
		view.mark, view.colour = markActive, colourBlue
		if p.Status.Phase == v1alpha1.RolloutStalled || p.Status.Phase == v1alpha1.RolloutBlocked {
			view.colour = colourRed
		}
		notes = append(notes, record.Message)
		if s.SoakDuration != nil && record.ConditionMetTime != nil {
			notes = append(notes, until("soak ends", record.ConditionMetTime.Add(s.SoakDuration.Duration)))
		}
		if record.ProgressDeadlineTime != nil {
			notes = append(notes, until("deadline", record.ProgressDeadlineTime.Time))
		}
	}
	if record.ApprovedBy != "" {
		notes = append(notes, "approved by "+record.ApprovedBy)
	}
	view.note = strings.Join(notes, "; ")
	return view, nil
}

// clock renders a time of day in UTC.
func clock(t time.Time) string {
	return t.UTC().Format("15:04:05Z")
}

// revisionWidth is the width of the widest stage revision of a policy, in
// runes, for the live view's column of revisions.
func revisionWidth(p *v1alpha1.StagedBindingPolicy) int {
	width := 0
	for _, s := range p.Spec.Stages {
		width = max(width, utf8.RuneCountInString(printable(stageRevision(p, s.Name))))
	}
	return width
}

// padRunes pads s with spaces to width runes.
func padRunes(s string, width int) string {
	return s + strings.Repeat(" ", max(0, width-utf8.RuneCountInString(s)))
}
