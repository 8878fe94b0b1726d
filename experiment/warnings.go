package experiment

import (
	"fmt"
	"slices"
	"strings"

	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/variability"
)

// pinnedTable says whether the artifact's pinned GPU table stands in for
// the profile draw, and pinnedExtras whether its pinned extra arrivals
// stand in for the generator, for these (effective) options.
func (o Options) pinnedTable() bool {
	return o.Pinned && o.Cluster == artifactPinShape && o.GPUScores == "" &&
		o.Profile == variability.DefaultProfile && (o.Sampling == "with" || o.Sampling == "")
}

func (o Options) pinnedExtras() bool {
	return o.pinnedTable() && o.ExtraLoad == 2 && strings.HasPrefix(o.Trace, "sia-philly/")
}

// NoEffect lists, one line each, the options the user gave (named in
// given, as flag names) that cannot change these runs: a Tiresias knob
// under another scheduler, a profile or sampling mode when the GPU
// values are pinned or read from a file, a seed when nothing random is
// left to draw, a PM-First tie-break or K strategy when no placement
// reads PM-scores. Callers print each once, as a warning.
func NoEffect(o Options, given []string) []string {
	o = o.Effective()
	has := func(f string) bool { return slices.Contains(given, f) }
	places := o.PlacementList()
	anyOf := func(names ...string) bool {
		for _, p := range places {
			// A migration-aware variant reads what its base reads.
			if slices.Contains(names, strings.TrimSuffix(strings.ToLower(p), place.MigrationAwareSuffix)) {
				return true
			}
		}
		return false
	}
	var out []string
	if o.Scheduler != "tiresias-las" {
		for _, f := range []string{"tiresias-thresholds", "tiresias-starvation"} {
			if has(f) {
				out = append(out, fmt.Sprintf("--%s has no effect with --scheduler %s (only tiresias-las reads it)", f, o.Scheduler))
			}
		}
	}
	valuesFixed := ""
	switch {
	case o.GPUScores != "":
		valuesFixed = "--gpu-scores fixes every GPU's values"
	case o.pinnedTable():
		valuesFixed = "the artifact's pinned GPU table applies (--pinned=false to draw from the profile)"
	}
	if valuesFixed != "" {
		for _, f := range []string{"profile", "sampling"} {
			if has(f) {
				out = append(out, fmt.Sprintf("--%s has no effect: %s", f, valuesFixed))
			}
		}
	}
	scored := anyOf("pal", "pm-first", "pmfirst")
	if !scored && has("pmfirst-tiebreak") {
		out = append(out, "--pmfirst-tiebreak has no effect: no pal or pm-first placement is run")
	}
	if !scored && has("k-strategy") {
		out = append(out, "--k-strategy has no effect: no pal or pm-first placement is run")
	}
	if has("seed") && valuesFixed != "" && !anyOf("random-sticky", "random-nonsticky") &&
		(o.ExtraLoad == 0 || o.pinnedExtras()) {
		why := "the GPU values are fixed, no extra arrivals are generated and no random placement is run"
		if scored {
			out = append(out, "--seed only seeds K-Means (the PM-score bins) here: "+why)
		} else {
			out = append(out, "--seed has no effect: "+why)
		}
	}
	return out
}
