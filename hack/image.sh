#!/usr/bin/env bash
# Builds PAL's container image without a Docker daemon: static pal-kube and
# pal (CGO_ENABLED=0, -trimpath) in one layer on no base image, run as the
# non-root user 65532:65532 with /pal-kube (the scheduler) as its
# entrypoint and /pal (the simulator, which sweep Jobs run) beside it.
# Writes an OCI image layout directory and, with --tarball, a `docker save`
# tarball too. See docs/install.md for loading and pushing it.
#
# Usage: hack/image.sh [--out DIR] [--tarball FILE] [--tag REF] [--version V]
#   --out DIR       OCI layout directory (default _output/image/oci)
#   --tarball FILE  also write a tarball for docker load / kind load image-archive
#   --tag REF       reference recorded in the image (default pal:<version>)
#   --version V     pal's version and the image's version label
#                   (default: git describe, else "devel")
# GOARCH picks the architecture (default: this machine's). SOURCE_DATE_EPOCH
# sets every timestamp (default: the last commit's time, else the epoch), so
# a checkout builds the same image digest every time.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"

out="_output/image/oci"; tarball=""; tag=""; version=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out="$2"; shift 2 ;;
    --tarball) tarball="$2"; shift 2 ;;
    --tag) tag="$2"; shift 2 ;;
    --version) version="$2"; shift 2 ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) echo "image.sh: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done

ingit=false
if git -C "$root" rev-parse --is-inside-work-tree >/dev/null 2>&1; then ingit=true; fi
revision=""
if $ingit; then
  revision="$(git -C "$root" rev-parse HEAD)"
  : "${version:=$(git -C "$root" describe --tags --always --dirty 2>/dev/null || echo devel)}"
  : "${SOURCE_DATE_EPOCH:=$(git -C "$root" log -1 --format=%ct)}"
fi
: "${version:=devel}"
: "${tag:=pal:${version//[^A-Za-z0-9_.-]/-}}"
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-0}"

work="$(mktemp -d "${TMPDIR:-/tmp}/pal-image.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# -buildvcs records the commit for `pal --version` where there is one; a
# tarball of the sources has none and must not fail for it.
for cmd in pal pal-kube; do
  CGO_ENABLED=0 go build -trimpath -buildvcs="$ingit" \
    -ldflags "-s -w -X main.version=$version" -o "$work/$cmd" "./cmd/$cmd"
done

mkdir -p "$(dirname "$out")"
out="$(realpath -m "$out")"
[ -z "$tarball" ] || tarball="$(realpath -m "$tarball")"
args=(-binary "$work/pal" -kube-binary "$work/pal-kube" -layout "$out" -tag "$tag" -version "$version" -revision "$revision" -arch "$(go env GOARCH)")
if [ -n "$tarball" ]; then
  mkdir -p "$(dirname "$tarball")"
  args+=(-tarball "$tarball")
fi
# The image writer is its own module (hack/image); its build must be for
# this machine even when GOARCH asks for another image architecture.
(cd hack/image && GOARCH="$(go env GOHOSTARCH)" GOOS="$(go env GOHOSTOS)" CGO_ENABLED=0 go run . "${args[@]}")
echo "image.sh: OCI layout in $out${tarball:+, tarball $tarball}" >&2
