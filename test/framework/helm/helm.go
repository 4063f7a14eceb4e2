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

// Package helm runs a real helm (built from source by hack/tool.sh) on the
// charts of config/chart, and applies what it renders to an API server with
// server-side apply, as an installation would.
package helm

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kubestellar/workload-stager/test/framework/environment"
)

// BinaryEnv names the helm binary; make test sets it.
const BinaryEnv = "STAGER_HELM"

// The charts, relative to the repository root.
var (
	// StagerChart is the stager in its hosting cluster.
	StagerChart = filepath.Join("config", "chart", "workload-stager")
	// SpaceChart is what every WDS needs.
	SpaceChart = filepath.Join("config", "chart", "workload-stager-space")
)

// FieldOwner is the field manager of the objects Apply applies.
const FieldOwner = "helm"

// Run runs helm with args in the repository root and returns its standard
// output.
func Run(args ...string) ([]byte, error) {
	bin := os.Getenv(BinaryEnv)
	if bin == "" {
		return nil, fmt.Errorf("$%s is not set: run the tests through make test, which builds helm from source", BinaryEnv)
	}
	root, err := environment.RepoRoot()
	if err != nil {
		return nil, err
	}
	var stdout, stderr bytes.Buffer
	cmd := exec.Command(bin, args...)
	cmd.Dir = root
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("helm %s: %w\n%s%s", strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes(), nil
}

// Template renders a chart (with its CRDs) as release in namespace, with
// --set values, and returns the objects.
func Template(chart, release, namespace string, set ...string) ([]*unstructured.Unstructured, error) {
	args := []string{"template", release, chart, "--namespace", namespace, "--include-crds"}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := Run(args...)
	if err != nil {
		return nil, err
	}
	return Objects(out)
}

// Objects parses a stream of YAML documents.
func Objects(stream []byte) ([]*unstructured.Unstructured, error) {
	decoder := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(stream), 4096)
	var objs []*unstructured.Unstructured
	for {
		obj := &unstructured.Unstructured{}
		err := decoder.Decode(&obj.Object)
		if errors.Is(err, io.EOF) {
			return objs, nil
		}
		if err != nil {
			return nil, fmt.Errorf("parsing YAML: %w", err)
		}
		if len(obj.Object) > 0 {
			objs = append(objs, obj)
		}
	}
}

// Find returns the object of the kind and name, or nil.
func Find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	return nil
}

// Apply applies objects with server-side apply, as their owner FieldOwner,
// so that the API server validates each one: CRDs first, waiting until they
// are established, then the rest in order.
func Apply(ctx context.Context, c client.Client, objs []*unstructured.Unstructured) error {
	var rest []*unstructured.Unstructured
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			rest = append(rest, o)
			continue
		}
		if err := apply(ctx, c, o); err != nil {
			return err
		}
		if err := environment.Poll(ctx, environment.PollInterval, time.Minute, "CRD "+o.GetName()+" to be established", func() error {
			// Read as unstructured: the client's scheme need not know CRDs.
			got := &unstructured.Unstructured{}
			got.SetGroupVersionKind(o.GroupVersionKind())
			if err := c.Get(ctx, client.ObjectKey{Name: o.GetName()}, got); err != nil {
				return err
			}
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(got.Object, crd); err != nil {
				return err
			}
			if !apihelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
				return errors.New("not established")
			}
			return nil
		}); err != nil {
			return err
		}
	}
	for _, o := range rest {
		if err := apply(ctx, c, o); err != nil {
			return err
		}
	}
	return nil
}

// apply applies one object.
func apply(ctx context.Context, c client.Client, o *unstructured.Unstructured) error {
	if err := c.Apply(ctx, client.ApplyConfigurationFromUnstructured(o.DeepCopy()), client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying %s %s: %w", o.GetKind(), o.GetName(), err)
	}
	return nil
}
