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

package textcut_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"pgregory.net/rapid"

	"github.com/kubestellar/workload-stager/internal/textcut"
)

// TestCutFitsAndKeepsWholeRunes: for any text, bound and mark, the result
// is the text itself when it fits, and otherwise a beginning of it, valid
// UTF-8 when the text is, followed by the mark, within the bound (unless
// the mark alone is longer), and no shorter than a rune's width needs.
func TestCutFitsAndKeepsWholeRunes(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOf(rapid.RuneFrom([]rune{'a', 'ü', '€', '𝄞'})).Draw(t, "s")
		limit := rapid.IntRange(0, 3*len(s)+4).Draw(t, "limit")
		mark := rapid.SampledFrom([]string{"", "...", "…", "… (cut)"}).Draw(t, "mark")
		got := textcut.Cut(s, limit, mark)
		if len(s) <= limit {
			if got != s {
				t.Fatalf("Cut(%q, %d) = %q, want it whole", s, limit, got)
			}
			return
		}
		kept, ok := strings.CutSuffix(got, mark)
		if !ok || !strings.HasPrefix(s, kept) || !utf8.ValidString(kept) {
			t.Fatalf("Cut(%q, %d, %q) = %q, want a whole-rune beginning and the mark", s, limit, mark, got)
		}
		if len(mark) <= limit && len(got) > limit {
			t.Fatalf("Cut(%q, %d, %q) = %q: %d bytes", s, limit, mark, got, len(got))
		}
		// The next rune would not have fitted.
		if r, size := utf8.DecodeRuneInString(s[len(kept):]); r != utf8.RuneError && len(kept)+size+len(mark) <= limit {
			t.Fatalf("Cut(%q, %d, %q) = %q cut more than it had to", s, limit, mark, got)
		}
	})
}
