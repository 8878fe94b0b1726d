#!/usr/bin/env bash
# reproduce-diff.sh: run `pal-reproduce --quick` from this checkout and
# compare every CSV it writes, byte for byte, with a reference directory
# written the same way (for example from the main branch before a
# restructuring).
#
#   bash hack/reproduce-diff.sh REFERENCE [OUT]
#
# REFERENCE is a directory `pal-reproduce --quick --out REFERENCE` wrote
# (or, from a checkout older than pal-reproduce, `pal reproduce --quick`);
# OUT (default: a fresh temporary directory) receives this checkout's run.
# With REFERENCE given as --write DIR, the script only writes DIR (the
# reference run) and stops.
#
# Timing columns are skipped: a CSV column whose header ends in _us or _ms,
# or starts with wall, holds wall-clock time and differs from run to run.
# Today that is fig18.csv's median_us, p99_us, mean_us and first_us
# (placement timing); every other column of every CSV must match exactly.
# A file present on one side only is a difference too.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
if [ $# -lt 1 ]; then
	echo "usage: $0 REFERENCE [OUT] | $0 --write DIR" >&2
	exit 2
fi
bin=$(mktemp -d "${TMPDIR:-/tmp}/reproduce-diff-bin.XXXXXX")
trap 'rm -rf "$bin"' EXIT
(cd "$root" && go build -o "$bin/pal-reproduce" ./cmd/pal-reproduce)

run() {
	rm -rf "$1"
	local start end
	start=$(date +%s)
	"$bin/pal-reproduce" --quick --out "$1" >"$bin/log" 2>&1 || {
		cat "$bin/log" >&2
		echo "reproduce-diff: pal-reproduce --quick failed" >&2
		exit 1
	}
	end=$(date +%s)
	echo "reproduce-diff: pal-reproduce --quick --out $1 took $((end - start)) s"
}

if [ "$1" = "--write" ]; then
	[ $# -eq 2 ] || { echo "usage: $0 --write DIR" >&2; exit 2; }
	run "$2"
	exit 0
fi

ref=$1
out=${2:-$bin/out}
[ -d "$ref" ] || { echo "reproduce-diff: no reference directory $ref" >&2; exit 2; }
run "$out"

# untimed prints a CSV without its timing columns. A file with a timing
# column must have no quoted fields (the split is a plain one on commas).
untimed() {
	awk -F, '
	NR == 1 {
		for (i = 1; i <= NF; i++) if ($i ~ /(_us|_ms)$/ || $i ~ /^wall/) skip[i] = 1
		for (i in skip) timed = 1
	}
	timed && /"/ { print "reproduce-diff: " FILENAME ":" NR ": quoted field in a CSV with timing columns" > "/dev/stderr"; exit 3 }
	{
		line = ""; sep = ""
		for (i = 1; i <= NF; i++) if (!(i in skip)) { line = line sep $i; sep = "," }
		print line
	}' "$1"
}

list() { (cd "$1" && find . -name '*.csv' | sort); }
bad=0
n=0
if ! diff <(list "$ref") <(list "$out") >"$bin/files"; then
	echo "reproduce-diff: the CSV files differ (< reference, > this checkout):"
	cat "$bin/files"
	bad=1
fi
for f in $(comm -12 <(list "$ref") <(list "$out")); do
	n=$((n + 1))
	if head -1 "$ref/$f" | grep -Eq '(^|,)(wall[^,]*|[^,]*_us|[^,]*_ms)(,|$)'; then
		if ! diff <(untimed "$ref/$f") <(untimed "$out/$f") >"$bin/d"; then
			echo "reproduce-diff: $f differs (timing columns skipped):"
			head -20 "$bin/d"
			bad=1
		fi
	elif ! cmp -s "$ref/$f" "$out/$f"; then
		echo "reproduce-diff: $f differs:"
		diff "$ref/$f" "$out/$f" | head -20 || true
		bad=1
	fi
done
if [ $bad -ne 0 ]; then
	echo "reproduce-diff: FAIL ($n CSVs compared against $ref)"
	exit 1
fi
echo "reproduce-diff: $n CSVs identical to $ref (timing columns skipped)"
