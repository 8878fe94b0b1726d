#!/usr/bin/env bash
# Whole `pal sim` processes at scale, each timed by /usr/bin/time (wall,
# CPU and peak RSS), medians over several runs:
#   20k: 20,000 Synergy jobs (Philly GPU demands, Gavel-like lengths,
#        the Blox/PAL artifact's trace shape) at 12 jobs/h, seed 1, on
#        16x4, every job tracked, under FIFO, LAS, SRTF and Tiresias-LAS
#        with PAL placement; target under 0.5 s each
#   100k: 100,000 jobs at 1,000 jobs/h on 4608x6, FIFO and PAL
#   1M: 1,000,000 jobs at 1,000 jobs/h on 4608x6, FIFO and PAL; target
#        under 10 s and 512 MB
# all with --round 300 --extra-load 0 --pinned=false, no per-job output.
#
#   hack/sim-scale.sh                       5 runs of each 20k case, 3 of the others
#   RUNS=3 RUNS_BIG=1 ONE_M=0 hack/sim-scale.sh
#
# Every run of a case must print the same avg JCT and migrations; the
# script stops otherwise. The machine's load average is printed before
# and after each case: the CPU figures are those of a shared machine. The
# record goes to stdout; docs/measurements keeps one.
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-5}
RUNS_BIG=${RUNS_BIG:-3}
ONE_M=${ONE_M:-1}
OUT=${OUT:-bench-out/sim-scale}
mkdir -p "$OUT"
export CGO_ENABLED=0
if [ ! -x /usr/bin/time ]; then
  echo "hack/sim-scale.sh: needs /usr/bin/time (apt-get install time)" >&2
  exit 1
fi
go build -o "$OUT/pal" ./cmd/pal
pal=$OUT/pal

trace() { # name rate jobs
  [ -s "$OUT/$1.csv" ] || "$pal" trace synergy --rate "$2" --jobs "$3" --seed 1 --out "$OUT/$1.csv" 2>/dev/null
}
load() { cut -d' ' -f1-3 /proc/loadavg; }

echo "\$ hack/sim-scale.sh   ($(date -u +%Y-%m-%d), RUNS=$RUNS RUNS_BIG=$RUNS_BIG ONE_M=$ONE_M)"
echo "# $(go version | cut -d' ' -f3-), $(nproc) cores, $(awk '/MemTotal/ {printf "%.0f GiB", $2/1048576}' /proc/meminfo)"
echo "# flags: --round 300 --extra-load 0 --pinned=false -o csv; wall, cpu (user+sys) and peak RSS of the whole process, medians"
printf '%-26s %4s %8s %8s %9s %12s %11s  %s\n' case runs wall_s cpu_s peak_MiB avg_jct_s migrations "load before -> after"

# run NAME CLUSTER TRACE SCHED RUNS
run() {
  local name=$1 cluster=$2 tr=$3 sched=$4 n=$5 before
  before=$(load)
  : >"$OUT/runs.txt"
  for _ in $(seq "$n"); do
    /usr/bin/time -f "%e %U %S %M" -o "$OUT/time.txt" "$pal" sim --trace "$OUT/$tr.csv" --cluster "$cluster" \
      --round 300 --extra-load 0 --pinned=false --scheduler "$sched" --placement pal -o csv >"$OUT/out.csv"
    read -r wall user sys rss <"$OUT/time.txt"
    res=$(grep -v '^#' "$OUT/out.csv" | tail -1 | cut -d, -f5,12)
    echo "$wall $(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }') $rss $res" >>"$OUT/runs.txt"
  done
  if [ "$(cut -d' ' -f4 "$OUT/runs.txt" | sort -u | wc -l)" != 1 ]; then
    echo "hack/sim-scale.sh: $name: the runs disagree:" >&2
    cat "$OUT/runs.txt" >&2
    exit 1
  fi
  med() { cut -d' ' -f"$1" "$OUT/runs.txt" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
  printf '%-26s %4d %8.2f %8.2f %9.0f %12s %11s  %s -> %s\n' "$name" "$n" "$(med 1)" "$(med 2)" \
    "$(awk -v k="$(med 3)" 'BEGIN { print k / 1024 }')" \
    "$(head -1 "$OUT/runs.txt" | cut -d' ' -f4 | cut -d, -f1)" "$(head -1 "$OUT/runs.txt" | cut -d' ' -f4 | cut -d, -f2)" \
    "$before" "$(load)"
}

trace syn20k 12 20000
for sched in fifo las srtf tiresias-las; do
  run "20k-16x4/$sched/pal" 16x4 syn20k "$sched" "$RUNS"
done
trace syn100k 1000 100000
run "100k-4608x6/fifo/pal" 4608x6 syn100k fifo "$RUNS_BIG"
if [ "$ONE_M" = 1 ]; then
  trace syn1m 1000 1000000
  run "1M-4608x6/fifo/pal" 4608x6 syn1m fifo "$RUNS_BIG"
fi
