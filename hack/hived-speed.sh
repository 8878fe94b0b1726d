#!/usr/bin/env bash
# HiveD's guarantee under variable GPU speeds: every VC's mean wait and
# JCT under hived, hived-pm and hived-speed against its private cluster
# (its cells drawn K times from the physical cluster, --private-draws),
# on the synthetic 96-GPU week and the Philly trace with its VCs.
#
#   hack/hived-speed.sh                   seeds 1-3, L = 0.7/0.9/1.1, Philly 1x and 2x
#   hack/hived-speed.sh -philly ""        the synthetic settings only
#   hack/hived-speed.sh -philly-jobs 3000 a prefix of the Philly trace
#   hack/hived-speed.sh -split-bound -seeds 1,2,3,4,5,6,7,8,9 -loads 1.1 -philly ""
#                                         runs nothing: the best static split of
#                                         the nodes against the private draws
#
# Flags go to hack/hivedspeed (-seeds, -loads, -days, -philly, -draws,
# -modes, -cache DIR to keep the private references between runs,
# -workers, -placement). The synthetic week takes about 5 minutes of CPU;
# the whole Philly trace, with its 8 private draws per VC, far longer.
# The record goes to stdout; docs/measurements keeps one.
set -euo pipefail
cd "$(dirname "$0")/.."
echo "\$ hack/hived-speed.sh $*   ($(date -u +%Y-%m-%dT%H:%MZ))"
go run ./hack/hivedspeed "$@"
