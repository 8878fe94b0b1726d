#!/usr/bin/env bash
# How far a forecast's start times are from what then happens, when jobs
# keep arriving after the forecast (pal sim --forecast-at assumes none):
# Sia-Philly workloads, FIFO, PAL placement, the artifact's settings, a
# forecast at 6 h, 1 day and 3 days; per forecast, the waiting jobs
# compared (those not preempted before it, whose first start --jobs-out
# records) and the median and p90 of |forecast start - actual start|,
# with each backfill mode.
#
#   hack/forecast-accuracy.sh          workloads 1-8 (well under a minute)
#   hack/forecast-accuracy.sh 3 5      only these workloads
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/pal" ./cmd/pal
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(1 2 3 4 5 6 7 8)
printf '%-8s %-8s %8s %6s %12s %12s %12s\n' workload backfill at_s n median_err_s p90_err_s exact
for w in "${workloads[@]}"; do
  for m in none easy; do
    for at in 21600 86400 259200; do
      "$work/pal" sim --trace "sia-philly/$w" --placement pal --backfill "$m" --forecast-at "$at" \
        --forecast-out "$work/fc.csv" --jobs-out "$work/jobs.csv" > /dev/null
      awk -F, '
        FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
        FILENAME ~ /jobs.csv$/ { if ($col[FILENAME, "preemptions"] == 0) start[$col[FILENAME, "job_id"]] = $col[FILENAME, "first_start_s"]; next }
        { id = $col[FILENAME, "job_id"]; if (!(id in start)) next
          e = $col[FILENAME, "estimated_start_s"] - start[id]; print (e < 0 ? -e : e) }
      ' "$work/jobs.csv" "$work/fc.csv" | sort -g | awk -v w="$w" -v m="$m" -v at="$at" '
        { err[++n] = $1; if ($1 == 0) exact++ }
        END { med = n ? err[int((n + 1) / 2)] : 0; p90 = n ? err[int(0.9 * (n - 1)) + 1] : 0
          printf "%-8s %-8s %8d %6d %12.0f %12.0f %12d\n", w, m, at, n, med, p90, exact }'
    done
  done
done
