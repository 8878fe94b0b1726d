//go:build tools

// Package tools pins the helm command for hack/helm.sh to build.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
