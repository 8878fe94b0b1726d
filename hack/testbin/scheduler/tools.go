//go:build tools

// Package tools pins kube-scheduler so that `go build
// k8s.io/kubernetes/cmd/kube-scheduler` resolves inside this module. Only
// the peer benchmark (hack/kube-perf.sh --compare) builds it.
package tools

import _ "k8s.io/kubernetes/cmd/kube-scheduler"
