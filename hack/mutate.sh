#!/usr/bin/env bash
# Plant one bug (or a list of them) in the working tree, run the tests
# that should catch it, and put the file back, always.
#
#   hack/mutate.sh round/round.go:331 fallthrough continue
#   hack/mutate.sh -patch my-bug.diff
#   hack/mutate.sh -short -integration 'TestGang' -batch mutants.txt
#
# Tests run: the mutated package's, then every package importing it, then
# (with -integration) the named integration tests; the first failure kills
# the mutant. Each mutant prints KILLED (with the failing tests), SURVIVED
# or INVALID (it does not build); a batch ends with a table of survival
# rates per package. docs/testing.md describes the list format.
set -euo pipefail
cd "$(dirname "$0")/.."
exec go run ./hack/mutate "$@"
