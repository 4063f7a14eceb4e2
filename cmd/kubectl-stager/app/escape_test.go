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
	"bytes"
	"errors"
	"testing"
)

func TestPrintable(t *testing.T) {
	for in, want := range map[string]string{
		"stage \"dev\": condition holds": "stage \"dev\": condition holds",
		"héllo ✓ ▶":                      "héllo ✓ ▶",
		"a\x1b[8mb":                      `a\x1b[8mb`,
		"\x1b]52;c;aGk=\x07":             `\x1b]52;c;aGk=\a`,
		"two\nlines\tand a tab\r":        `two\nlines\tand a tab\r`,
		"\u202eevil":                     `\u202eevil`,
		"\u0085next line":                `\u0085next line`,
		"bad \xff byte":                  `bad \xff byte`,
	} {
		if got := printable(in); got != want {
			t.Errorf("printable(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestFprintfAndTheErrorWriter(t *testing.T) {
	var b bytes.Buffer
	fprintf(&b, "%s|%v|%d\n", "a\x1bb", errors.New("c\x07d"), 7)
	if got, want := b.String(), "a\\x1bb|c\\ad|7\n"; got != want {
		t.Errorf("fprintf printed %q, want %q", got, want)
	}
	b.Reset()
	in := []byte("Error: x\x1b[8m\n\tusage\n")
	if n, err := (escapingWriter{&b}).Write(in); err != nil || n != len(in) {
		t.Errorf("Write = %d, %v", n, err)
	}
	if got, want := b.String(), "Error: x\\x1b[8m\n\tusage\n"; got != want {
		t.Errorf("the error writer printed %q, want %q", got, want)
	}
}
