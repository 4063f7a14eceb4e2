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

// Package textcut cuts text that goes into a bounded field (a condition or
// Event message, a status) to a number of bytes, at a rune boundary, marking
// the cut. It is the one home of that cut for every package that writes such
// fields; it imports nothing of the stager.
package textcut

import "unicode/utf8"

// Cut returns s when it has at most limit bytes, and otherwise the longest
// beginning of s that, followed by mark, fits in limit bytes, cut at a rune
// boundary, followed by mark. A mark longer than limit gives mark alone.
func Cut(s string, limit int, mark string) string {
	if len(s) <= limit {
		return s
	}
	n := max(limit-len(mark), 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + mark
}
