// Package data embeds the inputs `pal` needs with no files around: the
// PAL artifact's Sia-Philly traces, the reference inputs that pin the
// artifact's own run (its per-GPU score table and its traces extended with
// the extra arrivals), the Frontera testbed traces and the processed
// Philly job trace used for Synergy-style workloads. PROVENANCE.md says
// where each file comes from and under which licence.
package data

import "embed"

// Traces holds traces/sia-philly/workload-{1..8}.csv and
// traces/frontera-testbed/*.csv.
//
//go:embed traces
var Traces embed.FS

// Reference holds reference/pal-artifact-gpu-pmscores.csv and
// reference/sia-philly-extended/workload-{1..8}.csv.
//
//go:embed reference
var Reference embed.FS

// Philly holds philly/philly.csv (Pollux's processed Philly job trace) and
// philly/philly_vc.csv (Helios' node counts of the 11 large Philly VCs).
//
//go:embed philly
var Philly embed.FS
