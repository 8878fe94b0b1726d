#!/usr/bin/env bash
# Builds kube-scheduler, of the same Kubernetes version as the control plane
# hack/testbin.sh builds, from the tools module hack/testbin/scheduler, for
# the peer benchmark (hack/kube-perf.sh --compare) only: no test needs it,
# so CI does not build it. It is cached next to the other binaries (the
# directory `hack/testbin.sh --dir` prints); a cold build costs a few
# minutes after kube-apiserver's, whose build cache it shares.
#
# Usage: hack/kube-scheduler.sh     build (or reuse) and print the binary's path
set -euo pipefail

K8S_VERSION=1.37.2

here="$(cd "$(dirname "$0")" && pwd)"
dir="$(bash "$here/testbin.sh" --dir)"
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

bin="$dir/kube-scheduler"
if [ -x "$bin" ] && "$bin" --version 2>/dev/null | grep -q -- "v$K8S_VERSION"; then
  echo "kube-scheduler $K8S_VERSION cached" >&2
else
  echo "building kube-scheduler $K8S_VERSION" >&2
  minor="${K8S_VERSION#*.}"; minor="${minor%%.*}"
  ldf="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION"
  ldf="$ldf -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  (cd "$here/testbin/scheduler" &&
    CGO_ENABLED=0 go build -trimpath -ldflags "$ldf" -o "$bin.tmp" k8s.io/kubernetes/cmd/kube-scheduler)
  mv "$bin.tmp" "$bin"
fi
echo "$bin"
