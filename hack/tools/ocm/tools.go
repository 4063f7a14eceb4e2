//go:build tools

// Package tools pins Open Cluster Management's work agent.
package tools

import _ "open-cluster-management.io/ocm/cmd/work"
