//go:build tools

// Package tools pins controller-gen, kustomize and golangci-lint.
package tools

import (
	_ "sigs.k8s.io/controller-tools/cmd/controller-gen"
	_ "sigs.k8s.io/kustomize/kustomize/v5"
)
