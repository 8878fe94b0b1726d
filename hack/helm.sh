#!/usr/bin/env bash
# Builds the helm binary that renders deploy/chart in PAL's chart tests,
# from the tools module hack/testbin/helm (the Go module proxy, no
# download site). The binary is cached by version outside the checkout, so
# a second run costs a second; a cold build costs a few minutes of CPU.
#
# Usage: hack/helm.sh          build (or reuse) and print the binary's path
#        hack/helm.sh --path   print the path only, build nothing
#
# The path is $PAL_HELM when set, otherwise
# ${XDG_CACHE_HOME:-$HOME/.cache}/pal/testbin/helm-<version>/helm.
# The tests (internal/helmbin) compute the same default.
set -euo pipefail

HELM_VERSION=3.22.0

here="$(cd "$(dirname "$0")" && pwd)"
cache="${XDG_CACHE_HOME:-$HOME/.cache}"
bin="${PAL_HELM:-$cache/pal/testbin/helm-${HELM_VERSION}/helm}"

if [ "${1:-}" = "--path" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$(dirname "$bin")"
exec 9>"$bin.lock"
flock 9

start=$SECONDS
if [ -x "$bin" ] && "$bin" version --template '{{.Version}}' 2>/dev/null | grep -qx "v$HELM_VERSION"; then
  echo "helm: $HELM_VERSION cached" >&2
else
  echo "helm: building $HELM_VERSION (cold: a few minutes)" >&2
  (cd "$here/testbin/helm" &&
    CGO_ENABLED=0 go build -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v3/internal/version.version=v$HELM_VERSION" \
      -o "$bin.tmp" helm.sh/helm/v3/cmd/helm)
  mv "$bin.tmp" "$bin"
fi
echo "helm: ready in $((SECONDS - start)) s" >&2
echo "$bin"
