//go:build tools

// Package tools pins kube-controller-manager so that `go build
// k8s.io/kubernetes/cmd/kube-controller-manager` resolves inside this
// module.
package tools

import _ "k8s.io/kubernetes/cmd/kube-controller-manager"
