#!/usr/bin/env bash
# Performance of pal-kube scheduler on a dev cluster.
#
#   hack/kube-perf.sh              10,000 pods in gangs of 1-8 on 1,000 kwok
#                                  nodes x 8 GPUs, pal alone
#   hack/kube-perf.sh --compare    the peer benchmark: pal, kube-scheduler
#                                  (same Kubernetes version, built by
#                                  hack/kube-scheduler.sh) in its default
#                                  configuration and in its gang one
#                                  (kube-scheduler-gang), and the no-op
#                                  binder (the apiserver's own ceiling), at
#                                  equal client QPS, each alone on a fresh
#                                  cluster, on 5,000 one-GPU pods, 500 gangs
#                                  of 8 and 100 gangs of 4 (add --runs 3 for
#                                  medians)
#
# Other flags go to hack/kubeperf (go run ./hack/kubeperf -h lists them).
# Prints pods bound per second, create-to-bound p50/p99, the CPU seconds of
# the scheduler and the apiserver, gangs split over nodes and the Scheduled
# events posted; the load average of the machine is printed with every run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
bash hack/testbin.sh >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/pal-kube" ./cmd/pal-kube
go build -o "$tmp/kubeperf" ./hack/kubeperf
ks=()
for a in "$@"; do
  if [ "$a" = "--compare" ] || [[ "$a" == *kube-scheduler* ]]; then
    ks=(--kube-scheduler "$(bash hack/kube-scheduler.sh)")
  fi
done
"$tmp/kubeperf" --pal "$tmp/pal-kube" "${ks[@]}" "$@"
