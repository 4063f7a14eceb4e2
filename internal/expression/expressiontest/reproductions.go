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

// Package expressiontest holds the hostile conditions that the engine's
// tests and the suites share: the reproductions of issue 54's review,
// which ran or allocated past their charge, and a way to read the test
// process's peak memory.
package expressiontest

import (
	"fmt"
	"strings"
	"syscall"
)

// FormatOverSharedLists is N1: format over ten shared copies of
// lists.range(30000) with 300 %s builds 570 MB before cel-go charges it.
// It needs no input and fits the CRD's 4 KiB (1.6 KB).
func FormatOverSharedLists() string {
	return `[lists.range(30000)].exists(x, [[` + strings.TrimSuffix(strings.Repeat("x, ", 10), ", ") + `]].exists(y, '` +
		strings.Repeat("%s", 300) + `'.format([` + strings.TrimSuffix(strings.Repeat("y, ", 300), ", ") + `]).size() > 0))`
}

// EqualityOverSharedLists is N2: v9 != v9 over shared sub-lists walks 10^9
// leaves in one call that cel-go never interrupts.
func EqualityOverSharedLists() string {
	return SharedSubLists(9) + `v9 != v9` + strings.Repeat(")", 10)
}

// SharedSubLists binds v0 to a list of ten ints and each v<i>, up to v<k>,
// to ten copies of v<i-1>, each in a comprehension over a one-element
// list, leaving the expression open for a body and its k+1 closing
// parentheses.
func SharedSubLists(k int) string {
	var b strings.Builder
	b.WriteString(`[[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]].exists(v0, `)
	for i := 1; i <= k; i++ {
		fmt.Fprintf(&b, `[[%s]].exists(v%d, `, strings.TrimSuffix(strings.Repeat(fmt.Sprintf("v%d, ", i-1), 10), ", "), i)
	}
	return b.String()
}

// PeakRSS returns this process's peak resident set, in bytes.
func PeakRSS() (uint64, error) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, fmt.Errorf("getrusage: %w", err)
	}
	return uint64(u.Maxrss) << 10, nil
}
