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
	"encoding/json"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
)

// notice is a notice of StageStarted in space kcp#root:org:wds1.
func notice(seq int64) Notice {
	return Notice{Space: "kcp#root:org:wds1", Policy: "web", UID: "0b5e-uid", Sequence: seq, Type: "Normal",
		Reason: v1alpha1.EventReasonStageStarted, Note: `stage "prod" started`, Revision: "v2",
		Time: time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC)}
}

// TestCloudEventHasTheRequiredAttributes checks the structured JSON
// format of CloudEvents 1.0: specversion, id, source, type, the optional
// time, subject and datacontenttype, and a data object of the documented
// fields only; the id is the policy's UID and the sequence number.
func TestCloudEventHasTheRequiredAttributes(t *testing.T) {
	body, err := CloudEvent(notice(7))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil {
		t.Fatalf("%s: %v", body, err)
	}
	want := map[string]any{"specversion": "1.0", "id": "0b5e-uid-7", "source": "/spaces/kcp%23root:org:wds1/stagedbindingpolicies/web",
		"type": "io.kubestellar.stager.stage.started", "subject": "web", "time": "2026-11-30T08:00:00Z", "datacontenttype": "application/json"}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v, want %v", k, got[k], v)
		}
	}
	if keys := slices.Sorted(maps.Keys(got)); !slices.Equal(keys, []string{"data", "datacontenttype", "id", "source", "specversion", "subject", "time", "type"}) {
		t.Errorf("attributes %v", keys)
	}
	data, _ := got["data"].(map[string]any)
	wantData := map[string]any{"space": "kcp#root:org:wds1", "policy": "web", "revision": "v2", "event": "StageStarted",
		"severity": "Normal", "reason": "StageStarted", "message": `stage "prod" started`, "sequence": float64(7)}
	if !maps.Equal(data, wantData) {
		t.Errorf("data %v, want %v", data, wantData)
	}
}

// TestEventTypesAreOnePerEvent: each rollout event has a type of its own
// under TypePrefix, and a reason no subscription names has the generic
// one.
func TestEventTypesAreOnePerEvent(t *testing.T) {
	seen := map[string]bool{}
	for event, reasons := range v1alpha1.NotificationReasons {
		typ := EventType(reasons[0])
		if !strings.HasPrefix(typ, TypePrefix) || typ == TypePrefix+"event" || seen[typ] {
			t.Errorf("%s: type %q", event, typ)
		}
		seen[typ] = true
	}
	if got := EventType(v1alpha1.EventReasonFrozen); got != TypePrefix+"event" {
		t.Errorf("Frozen: %q", got)
	}
}

// TestSlackTextCannotFormat: whatever the space, policy, reason, note and
// revision hold, the Slack text has no <, > or & but in the three
// escapes, so it makes no link, mention or entity, and unescaped it
// shows each field as it was.
func TestSlackTextCannotFormat(t *testing.T) {
	field := rapid.StringOf(rapid.OneOf(rapid.SampledFrom([]rune("<>&@!|#*_~`:;")), rapid.Rune()))
	rapid.Check(t, func(rt *rapid.T) {
		n := notice(1)
		n.Space, n.Policy, n.Reason, n.Note, n.Revision = field.Draw(rt, "space"), field.Draw(rt, "policy"),
			field.Draw(rt, "reason"), field.Draw(rt, "note"), field.Draw(rt, "revision")
		body, err := Slack(n)
		if err != nil {
			rt.Fatal(err)
		}
		var msg map[string]string
		if err := json.Unmarshal(body, &msg); err != nil {
			rt.Fatalf("%s: %v", body, err)
		}
		text := msg["text"]
		rest := strings.NewReplacer("&amp;", "", "&lt;", "", "&gt;", "").Replace(text)
		if strings.ContainsAny(rest, "<>&") {
			rt.Fatalf("text %q has a bare <, > or &", text)
		}
		plain := strings.NewReplacer("&amp;", "&", "&lt;", "<", "&gt;", ">").Replace(text)
		for _, f := range []string{n.Space, n.Policy, n.Reason, n.Note, n.Revision} {
			if !strings.Contains(plain, strings.ToValidUTF8(f, "\uFFFD")) {
				rt.Fatalf("text %q does not show %q", plain, f)
			}
		}
		if len(msg) != 1 {
			rt.Fatalf("message %v has more than text", msg)
		}
	})
}
