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

package gatetest

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"strings"

	ksv1alpha1 "github.com/kubestellar/kubestellar/api/control/v1alpha1"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/kubestellar/workload-stager/api/v1alpha1"
	"github.com/kubestellar/workload-stager/internal/rollout"
)

// Default byte caps: a file may hold many CombinedStatuses (the API server
// keeps each object under about 1.5 MiB), and all the files one test reads
// stay well within what a laptop or a CI runner holds.
const (
	DefaultMaxFileBytes  = 8 << 20
	DefaultMaxTotalBytes = 64 << 20
)

// Limits bound what loading one test file reads.
type Limits struct {
	// MaxFileBytes bounds each file, the test file included.
	MaxFileBytes int64
	// MaxTotalBytes bounds all the files one test reads together (each
	// file counted once).
	MaxTotalBytes int64
}

// DefaultLimits are the limits of `kubectl stager test`.
var DefaultLimits = Limits{MaxFileBytes: DefaultMaxFileBytes, MaxTotalBytes: DefaultMaxTotalBytes}

// Suite is a GateTest file with its inputs read.
type Suite struct {
	// Name is the test file's name as given, for messages.
	Name string
	// File is the test file as written.
	File File
	// Policy is the policy the file names; nil with a policyRef.
	Policy *v1alpha1.StagedBindingPolicy
	// Cases are the cases with their inputs.
	Cases []LoadedCase
	// BytesRead is how many bytes loading read.
	BytesRead int64
}

// LoadedCase is a case with its inputs read.
type LoadedCase struct {
	Case
	// Binding is the stage's Binding, or nil.
	Binding *ksv1alpha1.Binding
	// Statuses are the CombinedStatuses of every file, in order.
	Statuses []ksv1alpha1.CombinedStatus
	// Answers are the analyses' answers, by analysis name.
	Answers map[string][]rollout.GateAnswer
}

// loader reads the files of one test within its limits.
type loader struct {
	fsys   fs.FS
	name   string
	limits Limits
	total  int64
	cache  map[string][]byte
}

// Load reads the GateTest file name of fsys, and every file it names, from
// fsys: a file system rooted at the test file's directory (os.Root.FS, so
// that no path or symbolic link leads out of it). Every error names the
// test file, the field, and the file it read.
func Load(fsys fs.FS, name string, limits Limits) (*Suite, error) {
	l := &loader{fsys: fsys, name: name, limits: limits, cache: map[string][]byte{}}
	s, err := l.load()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	s.BytesRead = l.total
	return s, nil
}

func (l *loader) load() (*Suite, error) {
	data, err := l.read(l.name)
	if err != nil {
		return nil, err
	}
	s := &Suite{Name: l.name}
	if err := strict(data, &s.File); err != nil {
		return nil, fmt.Errorf("not a GateTest: %w", err)
	}
	f := &s.File
	if f.Kind != Kind || f.APIVersion != APIVersion {
		return nil, fmt.Errorf("kind %q, apiVersion %q: want kind %s, apiVersion %s", f.Kind, f.APIVersion, Kind, APIVersion)
	}
	switch {
	case (f.Policy == "") == (f.PolicyRef == nil):
		return nil, errors.New("policy, policyRef: give exactly one")
	case f.PolicyRef != nil && f.PolicyRef.Name == "":
		return nil, errors.New("policyRef.name: empty")
	case f.Policy != "":
		p := &v1alpha1.StagedBindingPolicy{}
		if err := l.object("policy", f.Policy, p, "StagedBindingPolicy", v1alpha1.GroupVersion.String()); err != nil {
			return nil, err
		}
		s.Policy = p
	}
	if len(f.Cases) == 0 {
		return nil, errors.New("cases: none")
	}
	names := map[string]bool{}
	for i, c := range f.Cases {
		field := fmt.Sprintf("cases[%d]", i)
		lc, err := l.loadCase(field, c)
		if err != nil {
			return nil, err
		}
		if names[c.Name] {
			return nil, fmt.Errorf("%s.name: %q names another case too", field, c.Name)
		}
		names[c.Name] = true
		s.Cases = append(s.Cases, lc)
	}
	return s, nil
}

func (l *loader) loadCase(field string, c Case) (LoadedCase, error) {
	lc := LoadedCase{Case: c, Answers: map[string][]rollout.GateAnswer{}}
	switch {
	case c.Name == "":
		return lc, fmt.Errorf("%s.name: empty", field)
	case c.Stage == "":
		return lc, fmt.Errorf("%s.stage: empty", field)
	case !slices.Contains(outcomes, c.Expect.Outcome):
		return lc, fmt.Errorf("%s.expect.outcome: %q is none of %v", field, c.Expect.Outcome, outcomes)
	}
	if c.Inputs.Binding != "" {
		lc.Binding = &ksv1alpha1.Binding{}
		if err := l.object(field+".inputs.binding", c.Inputs.Binding, lc.Binding, "Binding", ksv1alpha1.GroupVersion.String()); err != nil {
			return lc, err
		}
	}
	for j, p := range c.Inputs.CombinedStatuses {
		f := fmt.Sprintf("%s.inputs.combinedStatuses[%d]", field, j)
		docs, err := l.documents(f, p)
		if err != nil {
			return lc, err
		}
		for k, doc := range docs {
			cs := ksv1alpha1.CombinedStatus{}
			if err := decode(doc, &cs, "CombinedStatus", ksv1alpha1.GroupVersion.String()); err != nil {
				return lc, fmt.Errorf("%s: %s: document %d: %w", f, p, k+1, err)
			}
			lc.Statuses = append(lc.Statuses, cs)
		}
	}
	names := make([]string, 0, len(c.Inputs.Analyses))
	for name := range c.Inputs.Analyses {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		in := c.Inputs.Analyses[name]
		f := fmt.Sprintf("%s.inputs.analyses[%s]", field, name)
		answers := in.Answers
		switch {
		case (in.File == "") == (len(in.Answers) == 0):
			return lc, fmt.Errorf("%s: give exactly one of file and answers", f)
		case in.File != "":
			data, err := l.read(in.File)
			if err != nil {
				return lc, fmt.Errorf("%s.file: %w", f, err)
			}
			var a Answers
			if err := strict(data, &a); err != nil {
				return lc, fmt.Errorf("%s.file: %s: %w", f, in.File, err)
			}
			answers = a.Answers
		}
		lc.Answers[name] = toAnswers(answers)
	}
	return lc, nil
}

// object reads the one object of file p into obj, which must be of the
// given kind and apiVersion.
func (l *loader) object(field, p string, obj any, kind, apiVersion string) error {
	docs, err := l.documents(field, p)
	if err != nil {
		return err
	}
	if len(docs) != 1 {
		return fmt.Errorf("%s: %s: holds %d documents, want one %s", field, p, len(docs), kind)
	}
	if err := decode(docs[0], obj, kind, apiVersion); err != nil {
		return fmt.Errorf("%s: %s: %w", field, p, err)
	}
	return nil
}

// documents reads file p and splits it into its YAML documents, leaving
// out empty ones.
func (l *loader) documents(field, p string) ([][]byte, error) {
	data, err := l.read(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field, err)
	}
	r := utilyaml.NewYAMLReader(bufio.NewReader(bytes.NewReader(data)))
	var docs [][]byte
	for {
		doc, err := r.Read()
		if errors.Is(err, io.EOF) {
			return docs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %s: %w", field, p, err)
		}
		if len(bytes.TrimSpace(stripComments(doc))) > 0 {
			docs = append(docs, doc)
		}
	}
}

// stripComments drops the comment lines of a YAML document, to tell an
// empty one.
func stripComments(doc []byte) []byte {
	var out []byte
	for line := range bytes.Lines(doc) {
		if t := bytes.TrimSpace(line); len(t) > 0 && t[0] != '#' {
			out = append(out, line...)
		}
	}
	return out
}

// typeMeta is the head of an object, to check its kind first.
type typeMeta struct {
	Kind       string `json:"kind"`
	APIVersion string `json:"apiVersion"`
}

// decode decodes one document strictly into obj, of kind and apiVersion.
func decode(doc []byte, obj any, kind, apiVersion string) error {
	var t typeMeta
	if err := yaml.Unmarshal(doc, &t); err != nil {
		return err
	}
	if t.Kind != kind || t.APIVersion != apiVersion {
		return fmt.Errorf("kind %q, apiVersion %q: want kind %s, apiVersion %s", t.Kind, t.APIVersion, kind, apiVersion)
	}
	return strict(doc, obj)
}

// strict decodes YAML data into obj, refusing unknown and duplicate
// fields, with an error that names the field's path.
func strict(data []byte, obj any) error {
	j, err := yaml.YAMLToJSON(data)
	if err != nil {
		return err
	}
	strictErrs, err := kjson.UnmarshalStrict(j, obj)
	if err != nil {
		return err
	}
	return errors.Join(strictErrs...)
}

// read reads file p within the limits, once.
func (l *loader) read(p string) ([]byte, error) {
	if data, ok := l.cache[p]; ok {
		return data, nil
	}
	if !fs.ValidPath(p) || strings.Contains(p, `\`) {
		return nil, fmt.Errorf("%q: not a path inside the test's directory (relative, with / between names, no . or ..)", p)
	}
	// A directory, a device or a named pipe is no input; opening a pipe
	// waits for a writer, so it is refused before it is opened, and
	// again once open, should it have been swapped in meanwhile.
	info, err := fs.Stat(l.fsys, p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, unwrapPath(err))
	}
	if !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	f, err := l.fsys.Open(p)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, unwrapPath(err))
	}
	defer func() { _ = f.Close() }()
	if info, err := f.Stat(); err != nil || !info.Mode().IsRegular() {
		return nil, fmt.Errorf("%s: not a regular file", p)
	}
	limit := min(l.limits.MaxFileBytes, l.limits.MaxTotalBytes-l.total)
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", p, unwrapPath(err))
	}
	if int64(len(data)) > limit {
		if limit == l.limits.MaxFileBytes {
			return nil, fmt.Errorf("%s: larger than the %d bytes a file may hold", p, l.limits.MaxFileBytes)
		}
		return nil, fmt.Errorf("%s: the test's files together are larger than the %d bytes a test may read", p, l.limits.MaxTotalBytes)
	}
	l.total += int64(len(data))
	l.cache[p] = data
	return data, nil
}

// unwrapPath drops the path an fs.PathError repeats.
func unwrapPath(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
