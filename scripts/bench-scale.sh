#!/usr/bin/env bash
# Scale benchmarks: whole `pal` processes on generated Synergy
# traces, plus the Go benchmarks of a placement round, summarised (and,
# with BASE, compared) by benchstat.
#
#   scripts/bench-scale.sh                 # this checkout only
#   BASE=main scripts/bench-scale.sh       # also the same runs built from a git ref
#
# Knobs (environment): COUNT runs per 20k-job case (default 5), COUNT_BIG
# runs per 100k-job case (3), ONE_M=1 to run the million-job trace
# (FIFO+PAL on 4608x6, /usr/bin/time -v: wall and peak RSS), ALL=1 to run
# every placement under FIFO on the 20k trace (not just PAL), BIG=0 to
# skip the 100k cases, STARTUP=0 to skip the start-up processes, OUT
# (default bench-out/).
#
# Traces (seed 1, every job tracked, written by this checkout's
# `pal trace synergy`):
#   20k: 20,000 jobs at 12 jobs/h on 16x4 (queues of thousands for months)
#   100k: 100,000 jobs at 1,000 jobs/h on 4608x6 (about what it completes)
#   1M: 1,000,000 jobs at 1,000 jobs/h on 4608x6
# and every run: --round 300 --extra-load 0 --pinned=false.
#
# Each process run is written as a Go benchmark line (ns/op = wall time,
# peak-RSS-KB from /usr/bin/time), so benchstat reports medians and, with
# BASE, before/after ratios. Start-up (pal --version, one Sia-Philly trace
# under PAL with the artifact's settings, and a one-line Go program as the
# machine's floor) is bench's BenchmarkProcess, which reads each child's
# CPU time at microsecond resolution; builds alternate, one run at a time.
set -euo pipefail
cd "$(dirname "$0")/.."

COUNT=${COUNT:-5}
COUNT_BIG=${COUNT_BIG:-3}
BIG=${BIG:-1}
ONE_M=${ONE_M:-0}
ALL=${ALL:-0}
STARTUP=${STARTUP:-1}
OUT=${OUT:-bench-out}
BENCHSTAT_VERSION=v0.0.0-20260908200009-22c9c6c9d4da
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export CGO_ENABLED=0

if [ ! -x /usr/bin/time ]; then
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq time
fi

go build -o "$OUT/pal-head" ./cmd/pal
bins=(head)
if [ -n "${BASE:-}" ]; then
  wt=$(mktemp -d)
  git worktree add -q --detach "$wt" "$BASE"
  (cd "$wt" && go build -o "$OUT/pal-base" ./cmd/pal)
  bins=(base head)
fi

trace() { # name rate jobs
  [ -s "$OUT/$1.csv" ] || "$OUT/pal-head" trace synergy --rate "$2" --jobs "$3" --seed 1 --out "$OUT/$1.csv"
}
trace syn20k 12 20000
[ "$BIG" = 1 ] && trace syn100k 1000 100000
[ "$ONE_M" = 1 ] && trace syn1m 1000 1000000

# run BIN CASE CLUSTER TRACE SCHED PLACEMENT: one timed process, appended
# to $OUT/process-BIN.txt as a benchmark line.
run() {
  local bin=$1 name=$2 cluster=$3 tr=$4 sched=$5 pl=$6
  /usr/bin/time -f "%e %M %U" -o "$OUT/time.txt" "$OUT/pal-$bin" sim --trace "$OUT/$tr.csv" --cluster "$cluster" \
    --round 300 --extra-load 0 --pinned=false --scheduler "$sched" --placement "$pl" -o csv >"$OUT/last-$bin-${name//\//_}.csv"
  read -r wall rss user <"$OUT/time.txt"
  awk -v n="$name" -v w="$wall" -v m="$rss" -v u="$user" \
    'BEGIN { printf "BenchmarkProcess/%s 1 %.0f ns/op %.0f user-ns/op %d peak-RSS-KB\n", n, w*1e9, u*1e9, m }' >>"$OUT/process-$bin.txt"
}

for bin in "${bins[@]}"; do : >"$OUT/process-$bin.txt"; done
for i in $(seq "$COUNT"); do
  for bin in "${bins[@]}"; do
    for sched in fifo las srtf tiresias-las; do
      run "$bin" "20k-16x4/$sched/pal" 16x4 syn20k "$sched" pal
    done
    if [ "$ALL" = 1 ]; then
      for pl in packed-sticky packed-nonsticky random-sticky random-nonsticky pm-first; do
        run "$bin" "20k-16x4/fifo/$pl" 16x4 syn20k fifo "$pl"
      done
    fi
  done
done
if [ "$BIG" = 1 ]; then
  for i in $(seq "$COUNT_BIG"); do
    for bin in "${bins[@]}"; do
      for pl in pal packed-nonsticky; do
        run "$bin" "100k-4608x6/fifo/$pl" 4608x6 syn100k fifo "$pl"
      done
    done
  done
fi
if [ "$ONE_M" = 1 ]; then
  /usr/bin/time -v "$OUT/pal-head" sim --trace "$OUT/syn1m.csv" --cluster 4608x6 --round 300 --extra-load 0 \
    --pinned=false --scheduler fifo --placement pal -o csv >"$OUT/last-1m.csv" 2>"$OUT/time-1m.txt"
  grep -E "Elapsed|Maximum resident|User time" "$OUT/time-1m.txt"
fi

if [ "$STARTUP" = 1 ]; then
  go test -c -o "$OUT/bench.test" ./bench
  for bin in "${bins[@]}"; do : >"$OUT/startup-$bin.txt"; done
  for i in $(seq "$COUNT"); do
    for bin in "${bins[@]}"; do
      PAL_BIN="$OUT/pal-$bin" "$OUT/bench.test" -test.run '^$' -test.bench Process -test.benchtime 20x >>"$OUT/startup-$bin.txt"
    done
  done
fi

# Go benchmarks: one placement round at 256, 4,096 and 27,648 GPUs.
gobench() { # dir out
  (cd "$1" && go test -run '^$' -bench 'PlacementRound' -count "$COUNT" ./bench) >"$2"
}
gobench . "$OUT/gobench-head.txt"
if [ -n "${BASE:-}" ]; then
  gobench "$wt" "$OUT/gobench-base.txt"
  git worktree remove --force "$wt"
fi

benchstat() { go run "golang.org/x/perf/cmd/benchstat@$BENCHSTAT_VERSION" "$@"; }
if [ -n "${BASE:-}" ]; then
  benchstat before="$OUT/process-base.txt" after="$OUT/process-head.txt"
  [ "$STARTUP" = 1 ] && benchstat before="$OUT/startup-base.txt" after="$OUT/startup-head.txt"
  benchstat before="$OUT/gobench-base.txt" after="$OUT/gobench-head.txt"
else
  benchstat "$OUT/process-head.txt"
  [ "$STARTUP" = 1 ] && benchstat "$OUT/startup-head.txt"
  benchstat "$OUT/gobench-head.txt"
fi
