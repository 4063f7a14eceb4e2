//go:build tools

// Package tools pins KubeStellar's controller-manager and its OCM transport
// controller.
package tools

import (
	_ "github.com/kubestellar/kubestellar/cmd/controller-manager"
	_ "github.com/kubestellar/kubestellar/pkg/transport/ocm-transport-controller"
)
