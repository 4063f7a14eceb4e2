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
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// printable returns s with every control character (newlines and tabs
// included), every character that reorders text (U+202E and the like) and
// every byte that is not UTF-8 written as a Go escape ("\x1b", "\n",
// "\u202e"). What the plugin prints comes from policy authors and from a
// space's objects, and a terminal obeys what it is sent: "\x1b[8m" hides
// the rest of a condition from an approver, OSC 52 writes the clipboard.
func printable(s string) string {
	if utf8.ValidString(s) && strings.IndexFunc(s, unprintable) < 0 {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unprintable(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// unprintable reports whether r is a control or bidirectional formatting
// character.
func unprintable(r rune) bool {
	return unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r)
}

// printables returns the elements of ss made printable.
func printables(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = printable(s)
	}
	return out
}

// fprintf is fmt.Fprintf with every string, error and fmt.Stringer argument
// made printable; the format is the plugin's own.
func fprintf(w io.Writer, format string, args ...any) {
	for i, arg := range args {
		switch a := arg.(type) {
		case string:
			args[i] = printable(a)
		case error:
			args[i] = printable(a.Error())
		case fmt.Stringer:
			args[i] = printable(a.String())
		}
	}
	fmt.Fprintf(w, format, args...)
}

// escapingWriter writes what cobra prints (errors and usage) with the
// characters printable escapes, but for newlines and tabs.
type escapingWriter struct{ w io.Writer }

// Write implements io.Writer; it reports p written whole.
func (e escapingWriter) Write(p []byte) (int, error) {
	lines := strings.Split(string(p), "\n")
	for i, line := range lines {
		fields := strings.Split(line, "\t")
		lines[i] = strings.Join(printables(fields), "\t")
	}
	if _, err := io.WriteString(e.w, strings.Join(lines, "\n")); err != nil {
		return 0, err
	}
	return len(p), nil
}
