#!/usr/bin/env bash
# What one write of a big ConfigMap costs the apiserver and etcd: the
# evicted-work records (evictedWorkConfigMap) are rewritten whole, up to
# 512 KiB. Starts a one-node kwok dev cluster, creates a ConfigMap of
# RECORDS records shaped as the scheduler writes them (about 200 bytes
# each), replaces it COUNT times (alternating two contents, so every
# write is a change), and prints the median and p90 of a write's latency
# and how much etcd's database grew (apiserver_storage_size_bytes, before
# any compaction).
#
#   hack/configmap-write-cost.sh          # RECORDS=2400 COUNT=100
set -euo pipefail
cd "$(dirname "$0")/.."
RECORDS=${RECORDS:-2400}
COUNT=${COUNT:-100}
work=$(mktemp -d)
go build -o "$work/pal-kube" ./cmd/pal-kube
trap '"$work/pal-kube" dev-cluster down --dir "$work/dev" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
"$work/pal-kube" dev-cluster up --nodes 1 --gpus-per-node 4 --dir "$work/dev" >"$work/up.log"
server=$(awk '/server:/ {print $2; exit}' "$work/dev/kubeconfig")
token=$(awk '/token:/ {print $2; exit}' "$work/dev/kubeconfig")
api() { curl -sk -H "Authorization: Bearer $token" -H 'Content-Type: application/json' "$@"; }
for v in 0 1; do
  awk -v n="$RECORDS" -v v="$v" 'BEGIN {
    srand(v + 1); printf "{\"apiVersion\":\"v1\",\"kind\":\"ConfigMap\",\"metadata\":{\"name\":\"write-cost\",\"namespace\":\"default\"},\"data\":{\"work.json\":\"{\\\"version\\\":1,\\\"gangs\\\":["
    for (i = 0; i < n; i++) {
      printf "%s{\\\"gang\\\":\\\"ns/gang-%05d\\\",\\\"owner\\\":\\\"%08x-%04x-%04x-%04x-%012x\\\",\\\"executed\\\":%.6f,\\\"attained\\\":%.6f,\\\"service\\\":%.6f,\\\"at\\\":\\\"2026-12-06T21:00:00Z\\\"}", (i ? "," : ""), i, rand()*2^32, rand()*2^16, rand()*2^16, rand()*2^16, rand()*2^40, rand()*1e5, rand()*1e5, rand()*1e6
    }
    printf "]}\"}}\n" }' >"$work/cm$v.json"
done
size() { api "$server/metrics" | awk '/^apiserver_storage_size_bytes/ {printf "%.0f", $2}'; }
api -X POST "$server/api/v1/namespaces/default/configmaps" -d @"$work/cm0.json" -o /dev/null
sleep 1
before=$(size)
for i in $(seq 1 "$COUNT"); do
  api -X PUT "$server/api/v1/namespaces/default/configmaps/write-cost" -d @"$work/cm$((i % 2)).json" -o /dev/null -w '%{http_code} %{time_total}\n'
done >"$work/puts.txt"
sleep 2
after=$(size)
bad=$(awk '$1 != 200' "$work/puts.txt" | wc -l)
sort -k2 -g "$work/puts.txt" | awk -v n="$COUNT" -v b="$before" -v a="$after" -v bad="$bad" -v bytes="$(wc -c <"$work/cm0.json")" '
  { t[NR] = $2 }
  END { printf "%d writes of %.0f KiB: median %.1f ms, p90 %.1f ms, %d failed; etcd grew %.2f MB (%.2f MB a write)\n",
        n, bytes / 1024, t[int((NR + 1) / 2)] * 1000, t[int(NR * 0.9)] * 1000, bad, (a - b) / 1e6, (a - b) / 1e6 / n }'
