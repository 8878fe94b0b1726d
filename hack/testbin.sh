#!/usr/bin/env bash
# Builds the real control plane PAL's Kubernetes tests and `pal-kube dev-cluster`
# run against: kube-apiserver, kube-controller-manager and etcd from the tools
# modules under hack/testbin/, and kwok, all from the Go module proxy. The
# binaries are cached by version outside the checkout, so a second run costs
# seconds; a cold run costs about 12-20 minutes of CPU on 2 cores
# (kube-apiserver and kube-controller-manager dominate; they share most of
# their packages, so the second reuses much of the first's build cache).
#
# Usage: hack/testbin.sh            build (or reuse) and print the directory
#        hack/testbin.sh --dir      print the directory only, build nothing
#
# The directory is $PAL_TESTBIN when set, otherwise
# ${XDG_CACHE_HOME:-$HOME/.cache}/pal/testbin/k8s-<v>_etcd-<v>_kwok-<v>.
# The Go side (internal/kube/testbin) computes the same default.
set -euo pipefail

K8S_VERSION=1.37.2
ETCD_VERSION=3.7.3
KWOK_VERSION=0.8.0

here="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}"
dir="${PAL_TESTBIN:-$cache/pal/testbin/k8s-${K8S_VERSION}_etcd-${ETCD_VERSION}_kwok-${KWOK_VERSION}}"

if [ "${1:-}" = "--dir" ]; then
  echo "$dir"
  exit 0
fi

mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9

export CGO_ENABLED=0
log() { echo "testbin: $*" >&2; }

# have NAME WANT: the binary exists and its --version output mentions WANT.
have() {
  [ -x "$dir/$1" ] && "$dir/$1" --version 2>/dev/null | grep -q -- "$2"
}

start=$SECONDS
if have etcd "$ETCD_VERSION"; then
  log "etcd $ETCD_VERSION cached"
else
  log "building etcd $ETCD_VERSION"
  (cd "$here/testbin/etcd" &&
    go build -trimpath -ldflags "-s -w" -o "$dir/etcd.tmp" go.etcd.io/etcd/server/v3)
  mv "$dir/etcd.tmp" "$dir/etcd"
fi

if have kube-apiserver "v$K8S_VERSION"; then
  log "kube-apiserver $K8S_VERSION cached"
else
  log "building kube-apiserver $K8S_VERSION (cold: about 10 minutes)"
  minor="${K8S_VERSION#*.}"; minor="${minor%%.*}"
  ldf="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION"
  ldf="$ldf -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  (cd "$here/testbin/apiserver" &&
    go build -trimpath -ldflags "$ldf" -o "$dir/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver)
  mv "$dir/kube-apiserver.tmp" "$dir/kube-apiserver"
fi

if have kube-controller-manager "v$K8S_VERSION"; then
  log "kube-controller-manager $K8S_VERSION cached"
else
  log "building kube-controller-manager $K8S_VERSION (a few minutes after kube-apiserver, whose build cache it reuses)"
  minor="${K8S_VERSION#*.}"; minor="${minor%%.*}"
  ldf="-s -w -X k8s.io/component-base/version.gitVersion=v$K8S_VERSION"
  ldf="$ldf -X k8s.io/component-base/version.gitMajor=1 -X k8s.io/component-base/version.gitMinor=$minor"
  (cd "$here/testbin/controller-manager" &&
    go build -trimpath -ldflags "$ldf" -o "$dir/kube-controller-manager.tmp" k8s.io/kubernetes/cmd/kube-controller-manager)
  mv "$dir/kube-controller-manager.tmp" "$dir/kube-controller-manager"
fi

# kwok has no replace directives, so go install works; its --version output
# does not carry the module version, so the versioned directory is the check.
if [ -x "$dir/kwok" ]; then
  log "kwok $KWOK_VERSION cached"
else
  log "building kwok $KWOK_VERSION"
  tmp="$(mktemp -d)"
  GOBIN="$tmp" go install -trimpath -ldflags "-s -w" "sigs.k8s.io/kwok/cmd/kwok@v$KWOK_VERSION"
  mv "$tmp/kwok" "$dir/kwok"
  rmdir "$tmp"
fi

log "ready in $((SECONDS - start)) s: $dir"
echo "$dir"
