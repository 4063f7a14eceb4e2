//go:build tools

// Package tools pins the Kubernetes commands built for envtest.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kubectl"
)
