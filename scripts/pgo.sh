#!/usr/bin/env bash
# Writes cmd/pal/default.pgo, the CPU profile `go build` uses for
# profile-guided optimisation of pal (it inlines the hot calls of the
# round loop and turns their interface and function-value calls into
# direct ones): pal sim on the 20,000-job Synergy trace on 16x4 with PAL
# placement, the flags of scripts/bench-scale.sh, RUNS runs (default 8)
# under LAS and a quarter as many under each of FIFO, SRTF and
# Tiresias-LAS, merged (at 100 samples a second, about 700).
# Run it again after large changes to the round loop; a stale profile
# only optimises less (go build ignores what no longer matches).
#
#   scripts/pgo.sh          # OUT (default bench-out/pgo) keeps the runs
set -euo pipefail
cd "$(dirname "$0")/.."

RUNS=${RUNS:-8}
OUT=${OUT:-bench-out/pgo}
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
export CGO_ENABLED=0

# Profiled without the old profile, so it does not shape the new one.
go build -pgo=off -o "$OUT/pal" ./cmd/pal
[ -s "$OUT/syn20k.csv" ] || "$OUT/pal" trace synergy --rate 12 --jobs 20000 --seed 1 --out "$OUT/syn20k.csv"
rm -f "$OUT"/*.prof
scheds=()
for _ in $(seq "$RUNS"); do scheds+=(las); done
for _ in $(seq $(((RUNS + 3) / 4))); do scheds+=(fifo srtf tiresias-las); done
i=0
for sched in "${scheds[@]}"; do
  i=$((i + 1))
  "$OUT/pal" sim --cpuprofile "$OUT/$i-$sched.prof" --trace "$OUT/syn20k.csv" --cluster 16x4 --round 300 \
    --extra-load 0 --pinned=false --scheduler "$sched" --placement pal -o csv >/dev/null
done
go tool pprof -proto "$OUT"/*.prof >cmd/pal/default.pgo
echo "wrote cmd/pal/default.pgo from ${#scheds[@]} runs"
