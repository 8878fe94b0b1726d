#!/usr/bin/env bash
# Run every fuzz target in the module, one at a time, for a while each.
#
#   hack/fuzz.sh                 60 s a target
#   hack/fuzz.sh 5m              5 minutes a target (~30 targets: 2.5 h)
#   hack/fuzz.sh 10s ./workload  only the targets of these packages
#
# Targets are found with `go test -list 'Fuzz.*'` in each package. Each
# runs alone on one worker (-parallel 1), so the run takes one core; start
# it with `nice -n 19` on a shared machine. A failing input is kept where
# go test puts it, testdata/fuzz/FuzzName/ in the target's package: commit
# it and it runs with the package's tests from then on, as a regression
# input. The end prints, per target, the executions, the new corpus
# entries ("interesting" inputs, kept in the Go build cache) and any
# crasher, then the totals; the exit status is 1 when a target failed.
# Where a worker hung or died, the input it held is run alone and the
# table says whether it fails there too (a slow or huge input under a
# loaded machine, or a real finding); one that passes alone need not be
# kept.
#
# Each new input that widens coverage is minimized before fuzzing goes
# on, and go test's default budget for that is 60 s. With a seed of a few
# kilobytes (a DCGM exporter page, a cells file) the first one took the
# whole run: FuzzParse in telemetry and tenancy showed 5 and 14
# executions and no new input in 45 s. So minimizing stops after
# FUZZ_MINIMIZE tries (default 100x, a count or a duration); a crasher
# kept may then be larger than it could be.
set -uo pipefail
cd "$(dirname "$0")/.."
time="${1:-60s}"
shift || true
pkgs=("$@")
[ ${#pkgs[@]} -gt 0 ] || pkgs=(./...)
log="$(mktemp -d)"
trap 'rm -rf "$log"' EXIT

targets=()
while read -r pkg; do
  while read -r name; do
    [[ "$name" == Fuzz* ]] && targets+=("$pkg $name")
  done < <(go test -list 'Fuzz.*' "$pkg" 2>/dev/null)
done < <(go list "${pkgs[@]}")
echo "fuzz: ${#targets[@]} targets, $time each ($(date -u +%H:%M) UTC, load $(cut -d' ' -f1-3 /proc/loadavg))"

failed=0
total=0
printf '%-44s %-26s %12s %8s  %s\n' package target execs new result > "$log/table"
fuzz1() { go test -run '^$' -fuzz "^${2}\$" -fuzztime "$time" -fuzzminimizetime "${FUZZ_MINIMIZE:-100x}" -parallel 1 "$1" >"$3" 2>&1; }
for t in "${targets[@]}"; do
  read -r pkg name <<<"$t"
  out="$log/$(echo "$pkg.$name" | tr '/' '_')"
  fuzz1 "$pkg" "$name" "$out"
  rc=$?
  # Go's coordinator can fail a target at the -fuzztime deadline with a
  # bare "context deadline exceeded" and no input written (a race between
  # its deadline and its workers' contexts, seen on loaded machines, not
  # a finding): run such a target once more and keep that run.
  note=""
  if [ $rc -ne 0 ] && grep -q '^    context deadline exceeded$' "$out" && ! grep -q 'testdata/fuzz/' "$out"; then
    fuzz1 "$pkg" "$name" "$out"
    rc=$?
    note=" (run again: the first ended in Go's deadline race, no input)"
  fi
  # The last progress line holds the totals: "fuzz: elapsed: 1m0s,
  # execs: 123456 (2057/sec), new interesting: 3 (total: 40)".
  execs="$(grep -o 'execs: [0-9]*' "$out" | tail -1 | cut -d' ' -f2)"
  new="$(grep -o 'new interesting: [0-9]*' "$out" | tail -1 | cut -d' ' -f3)"
  result="ok$note"
  if [ $rc -ne 0 ]; then
    failed=$((failed + 1))
    kept="$(grep -o 'testdata/fuzz/[^ ]*' "$out" | head -1)"
    result="FAILED ${kept:-(no input kept: see below)}"
    # A worker that hung (no answer for 10 s) or died (out of memory, a
    # runtime fatal error) gets the input it held written out, whether or
    # not that input is the cause: run it alone and say which it was.
    if [ -n "$kept" ] && grep -q 'fuzzing process hung or terminated unexpectedly' "$out"; then
      if go test -v -run "^${name}/${kept##*/}\$" "$pkg" >"$out.alone" 2>&1; then
        if grep -q -- "--- PASS: ${name}/${kept##*/}" "$out.alone"; then
          result="$result (worker hung or died; that input passes alone)"
        fi
      else
        result="$result (worker hung or died; that input fails alone too)"
      fi
    fi
    echo "---- $pkg $name" >&2
    grep -v '^fuzz: elapsed' "$out" | head -40 >&2
  fi
  total=$((total + ${execs:-0}))
  printf '%-44s %-26s %12s %8s  %s\n' "${pkg#github.com/palsched/pal/}" "$name" "${execs:-0}" "${new:-0}" "$result" | tee -a "$log/table"
done
echo
cat "$log/table"
echo "fuzz: ${#targets[@]} targets, $total executions, $failed failed ($(date -u +%H:%M) UTC)"
[ $failed -eq 0 ]
