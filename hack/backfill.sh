#!/usr/bin/env bash
# Backfill on the Sia-Philly workloads: strict order (none) against EASY
# backfill (easy) and start-whatever-fits (greedy), under FIFO and
# Tiresias, for PAL and packed-sticky placement, with the artifact's
# settings (16x4 GPUs, pinned GPU values and background arrivals).
#
#   hack/backfill.sh              workloads 1-8 (about a minute of CPU)
#   hack/backfill.sh 3 5          only these workloads
#
# Per run: the tracked jobs' mean JCT, GPU utilisation, makespan, and the
# big gangs' (16 GPUs or more, tracked) mean and largest wait before
# their first start. Durations are exact: the simulator's own model is
# the estimate backfill reads (its reservations hold to the second).
set -euo pipefail
cd "$(dirname "$0")/.."
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
go build -o "$work/pal" ./cmd/pal
workloads=("$@")
[ ${#workloads[@]} -gt 0 ] || workloads=(1 2 3 4 5 6 7 8)
printf '%-8s %-12s %-13s %-8s %12s %6s %12s %6s %14s %14s\n' workload scheduler placement backfill avg_jct_s util makespan_s big_n big_mean_wait big_max_wait
for w in "${workloads[@]}"; do
  for s in fifo tiresias-las; do
    for m in none easy greedy; do
      "$work/pal" sim --trace "sia-philly/$w" --scheduler "$s" --placement pal,packed-sticky --backfill "$m" \
        -o csv --jobs-out "$work/jobs.csv" | grep -v '^#' > "$work/sum.csv"
      awk -F, -v w="$w" -v s="$s" -v m="$m" '
        FNR == 1 { for (i = 1; i <= NF; i++) col[FILENAME, $i] = i; next }
        FILENAME ~ /sum.csv$/ { p = $col[FILENAME, "placement"]; order[++n] = p
          jct[p] = $col[FILENAME, "avg_jct_s"]; util[p] = $col[FILENAME, "utilization"]; span[p] = $col[FILENAME, "makespan_s"]; next }
        { f = FILENAME; if ($col[f, "tracked"] != "true" || $col[f, "gpus"] < 16) next
          p = $col[f, "placement"]; d = $col[f, "first_start_s"] - $col[f, "arrival_s"]
          big[p]++; sum[p] += d; if (d > mx[p]) mx[p] = d }
        END { for (i = 1; i <= n; i++) { p = order[i]
          printf "%-8s %-12s %-13s %-8s %12.2f %6.4f %12.0f %6d %14.0f %14.0f\n", w, s, p, m, jct[p], util[p], span[p], big[p], (big[p] ? sum[p] / big[p] : 0), mx[p] } }
      ' "$work/sum.csv" "$work/jobs.csv"
    done
  done
done
