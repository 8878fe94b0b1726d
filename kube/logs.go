package kube

import (
	"fmt"
	"slices"
	"strings"
)

// logGangBound writes the one INFO line a bound gang gets: its name, how
// many pods, the nodes and the devices on each. A gang some of whose
// binds failed gets a warning instead (the next round completes it from
// its bind-info).
//
// Binds settle in any order; the line lists the pods by node and device.
func (s *Scheduler) logGangBound(key string, parts []PodBind, failed int) {
	slices.SortFunc(parts, func(a, b PodBind) int {
		if c := strings.Compare(a.Node, b.Node); c != 0 {
			return c
		}
		return slices.Compare(a.GPUs, b.GPUs)
	})
	nodes, gpus := bindSummary(parts)
	if failed > 0 {
		s.log.Warn("gang partly bound", "gang", gangName(key), "pods", len(parts), "failed", failed, "nodes", nodes, "gpus", gpus)
		return
	}
	s.log.Info("bound gang", "gang", gangName(key), "pods", len(parts), "nodes", nodes, "gpus", gpus)
}

// bindSummary writes pods' placements as the node list "n0,n1" and the
// devices per node "n0:0,1,2,3 n1:0,1", nodes in first-seen order.
func bindSummary(parts []PodBind) (nodes, gpus string) {
	var order []string
	per := map[string][]int{}
	for _, p := range parts {
		if _, ok := per[p.Node]; !ok {
			order = append(order, p.Node)
		}
		per[p.Node] = append(per[p.Node], p.GPUs...)
	}
	g := make([]string, len(order))
	for i, n := range order {
		idx := per[n]
		slices.Sort(idx)
		g[i] = n + ":" + FormatIndices(idx)
	}
	return strings.Join(order, ","), strings.Join(g, " ")
}

// maxNamed is how many node names a summary warning lists.
const maxNamed = 5

// firstNames lists the first n of names, then how many more there are
// ("a, b, c and 4 more"): a message names a few nodes, not thousands.
func firstNames(names []string, n int) string {
	out := strings.Join(names[:min(len(names), n)], ", ")
	if len(names) > n {
		out += fmt.Sprintf(" and %d more", len(names)-n)
	}
	return out
}

// unscoredSummary is the one warning for the nodes newly found with GPUs
// that have no PM-score: how many nodes and GPUs, the first few names
// (sorted), and whether the ConfigMap is missing altogether.
func unscoredSummary(nodes []string, gpus int, src string, cmMissing bool) string {
	names := slices.Clone(nodes)
	slices.Sort(names)
	list := firstNames(names, maxNamed)
	why := "have no PM-score in ConfigMap " + src
	if cmMissing {
		why = "have no PM-score: ConfigMap " + src + " does not exist"
	}
	return fmt.Sprintf("%d GPUs on %d nodes (%s) %s; they count as median GPUs", gpus, len(names), list, why)
}
