//go:build tools

// Package tools pins Helm.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
