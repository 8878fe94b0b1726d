#!/usr/bin/env bash
# Performance of pal scheduler on a dev cluster: 10,000 pods in gangs of
# 1-8 on 1,000 kwok nodes x 8 GPUs (override with the flags of
# hack/kubeperf, e.g. hack/kube-perf.sh --pods 2000 --nodes 200).
# Prints pods bound per second, create-to-bound p50/p99, and the CPU
# seconds of the scheduler next to the apiserver's in the same run.
set -euo pipefail
cd "$(dirname "$0")/.."
export CGO_ENABLED=0
bash hack/testbin.sh >/dev/null
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
go build -o "$tmp/pal" ./cmd/pal
go run ./hack/kubeperf --pal "$tmp/pal" "$@"
