//go:build tools

// Package tools pins kcp's server binary.
package tools

import _ "github.com/kcp-dev/kcp/cmd/kcp"
