//go:build tools

// Package tools pins kube-apiserver so that `go build
// k8s.io/kubernetes/cmd/kube-apiserver` resolves inside this module.
package tools

import _ "k8s.io/kubernetes/cmd/kube-apiserver"
