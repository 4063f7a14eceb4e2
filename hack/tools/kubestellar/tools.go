//go:build tools

// Package tools pins KubeStellar's controller-manager.
package tools

import _ "github.com/kubestellar/kubestellar/cmd/controller-manager"
