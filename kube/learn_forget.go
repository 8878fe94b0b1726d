package kube

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/variability"
)

// Nodes that leave (learnForgetAfter). What was learned of a device is
// kept while its node is away (learnStage.known, the quarantine, the
// slowdowns DCGM's hints carried over a restart), so that a node that
// comes back after a reboot, a repair or a drain-and-delete starts from
// it rather than from the profile. On a cluster whose autoscaler names
// nodes after their addresses, though, names come and go for good, and
// without a limit the learned ConfigMap and /metrics would grow with
// every name ever seen. A node that has had no Node object for longer
// than learnForgetAfter is forgotten: its beliefs, quarantine and carried
// hints leave memory and the next write of the learned ConfigMap.
//
// A node is absent when the scheduler's informer has no Node object of
// its name; a cordoned or tainted node (out of the layout, still a Node)
// is not absent and keeps everything, its series included. The absence
// clock starts at the first sweep that finds the node gone, and is kept
// in the learned ConfigMap (AnnAbsentSince), so that a restarted or new
// leader goes on from it; a node the annotation does not name (one
// written by an older scheduler, or left out for size) starts its clock
// at the first sweep after the restart, so it is forgotten later, never
// sooner.
//
// The node's pal_learned_score and pal_gpu_quarantined series are
// deleted as soon as it is found absent, not when it is forgotten: the
// value is frozen (no learner holds the device any more), an alert on it
// would keep firing for hardware that is not there, and Prometheus keeps
// its history. A node that comes back gets its series again with its
// next learner.

const (
	// AnnAbsentSince, on the learned ConfigMap, is when each node that the
	// learned state names was first found without a Node object: "TIME
	// NODE,NODE; TIME NODE" (RFC 3339, oldest first, the nodes found at
	// one sweep together; "" when none is). Only with learnForgetAfter >
	// 0. A reader that does not know it ignores it.
	AnnAbsentSince = "pal.io/absent-since"
	// absentSinceBytes bounds AnnAbsentSince's value (a ConfigMap's
	// annotations are 256 KiB together, pal.io/quarantined among them):
	// beyond it the most recently absent nodes are left out, and after a
	// restart their clocks start again (forgotten later, not sooner). It
	// holds some 4,000 names of the ip-10-0-123-234 kind.
	absentSinceBytes = 64 << 10
	// forgetSweepEvery is how often forgetAbsent looks for absent nodes
	// besides a change of the usable nodes, which it follows at once (a
	// cordoned node deleted changes no layout).
	forgetSweepEvery = time.Minute
)

// forgetAbsent starts the absence clock of each node the learned state
// names that has no Node object, stops it for one that is back, and
// forgets one absent for longer than learnForgetAfter (see above). It
// sweeps when the usable nodes changed or forgetSweepEvery has passed
// (a round that does neither costs two comparisons), and marks the
// learned ConfigMap behind when a clock started, stopped or a node was
// forgotten.
func (s *Scheduler) forgetAbsent(snap *snapshot, now time.Time) {
	L, after := s.learn, s.cfg.LearnForgetAfter.Duration
	if after <= 0 || snap.LayoutGeneration == L.sweptLayout && now.Sub(L.sweptAt) < forgetSweepEvery {
		return
	}
	first := L.sweptAt.IsZero() // this replica's state is new: series of an earlier lead may be left
	L.sweptLayout, L.sweptAt = snap.LayoutGeneration, now
	named := L.namedNodes()
	changed := false
	for n := range L.absent {
		if !named[n] {
			delete(L.absent, n) // nothing kept of it any more
			changed = true
		}
	}
	var left, back, forget []string
	drop := map[string]bool{} // nodes whose series go
	for n := range named {
		since, was := L.absent[n]
		if s.state.Node(n) != nil {
			if was {
				delete(L.absent, n)
				back = append(back, n)
			}
			continue
		}
		if !was {
			since = now.Truncate(time.Second) // as AnnAbsentSince reads back
			L.absent[n] = since
			left = append(left, n)
		}
		if !was || first {
			drop[n] = true
		}
		if now.Sub(since) > after {
			forget = append(forget, n)
			drop[n] = true
		}
	}
	if len(drop) > 0 {
		s.dropNodeSeries(drop)
	}
	if len(left) > 0 {
		s.log.Info("nodes left the cluster; what was learned of them is kept for learnForgetAfter", "count", len(left), "nodes", someNodes(left), "learnForgetAfter", after)
	}
	if len(back) > 0 {
		s.log.Info("nodes back in the cluster; they keep what was learned of them", "count", len(back), "nodes", someNodes(back))
	}
	if len(forget) > 0 {
		gone := map[string]bool{}
		for _, n := range forget {
			gone[n] = true
			delete(L.ids, n)
		}
		L.forgetNodes(gone)
		s.log.Info("forgot what was learned of nodes absent for longer than learnForgetAfter", "count", len(forget), "nodes", someNodes(forget), "learnForgetAfter", after)
	}
	if changed || len(left) > 0 || len(back) > 0 || len(forget) > 0 {
		L.dirty = true
	}
}

// namedNodes are the nodes the learned state names: those with beliefs,
// a quarantine or a carried DCGM slowdown.
func (L *learnStage) namedNodes() map[string]bool {
	named := map[string]bool{}
	for k := range L.known {
		named[k.Node] = true
	}
	for k := range L.quarantined {
		named[k.Node] = true
	}
	for k := range L.restored {
		named[k.Node] = true
	}
	return named
}

// forgetNodes drops what the learned state holds of the nodes gone: their
// beliefs, quarantine, carried DCGM slowdowns and absence clocks. It
// leaves the learner alone: a node in the learner's numbering is
// dropped from it by making a new one (learnNodeIDs). Forgetting a
// node absent for learnForgetAfter and one that came back as another
// machine (learn_identity.go) is this one path.
func (L *learnStage) forgetNodes(gone map[string]bool) {
	for n := range gone {
		delete(L.absent, n)
	}
	maps.DeleteFunc(L.known, func(k GPUKey, _ [variability.NumClasses]float64) bool { return gone[k.Node] })
	maps.DeleteFunc(L.restored, func(k GPUKey, _ quarantineEntry) bool { return gone[k.Node] })
	q := len(L.quarantined)
	maps.DeleteFunc(L.quarantined, func(k GPUKey, _ quarantineEntry) bool { return gone[k.Node] })
	if len(L.quarantined) != q {
		L.qgen++
	}
}

// dropNodeSeries deletes the per-GPU learned series (pal_learned_score,
// pal_gpu_quarantined) of the devices of the nodes that the learned
// state names, each by its labels (no scan of the vectors).
func (s *Scheduler) dropNodeSeries(nodes map[string]bool) {
	L, m := s.learn, s.metrics.learn
	done := map[GPUKey]bool{}
	del := func(k GPUKey) {
		if !nodes[k.Node] || done[k] {
			return
		}
		done[k] = true
		idx := strconv.Itoa(k.Index)
		for c := range variability.Class(variability.NumClasses) {
			m.score.DeleteLabelValues(k.Node, idx, c.String())
		}
		m.quarantined.DeleteLabelValues(k.Node, idx)
	}
	for k := range L.known {
		del(k)
	}
	for k := range L.quarantined {
		del(k)
	}
	for k := range L.restored {
		del(k)
	}
}

// someNodes names up to ten nodes for a log line, sorted.
func someNodes(nodes []string) string {
	slices.Sort(nodes)
	if len(nodes) > 10 {
		return strings.Join(nodes[:10], ",") + fmt.Sprintf(",... (%d more)", len(nodes)-10)
	}
	return strings.Join(nodes, ",")
}

// formatAbsent is AnnAbsentSince's value, at most most bytes: the oldest
// clocks first; what does not fit (the newest) is left out.
func formatAbsent(absent map[string]time.Time, most int) string {
	byTime := map[int64][]string{}
	for n, at := range absent {
		byTime[at.Unix()] = append(byTime[at.Unix()], n)
	}
	times := slices.Sorted(maps.Keys(byTime))
	var b strings.Builder
	for _, at := range times {
		names := byTime[at]
		slices.Sort(names)
		head := time.Unix(at, 0).UTC().Format(time.RFC3339) + " "
		if b.Len() > 0 {
			head = "; " + head
		}
		for i, n := range names {
			add := len(n) + 1
			if i == 0 {
				add = len(head) + len(n)
			}
			if b.Len()+add > most {
				return b.String()
			}
			if i == 0 {
				b.WriteString(head)
			} else {
				b.WriteByte(',')
			}
			b.WriteString(n)
		}
	}
	return b.String()
}

// parseAbsent reads AnnAbsentSince's value (formatAbsent's form). Errors
// name the entry by its place.
func parseAbsent(v string) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	const most = 1 << 20 // nodes: a bound on what a crafted value can ask for
	parts := strings.Split(v, "; ")
	if len(parts) > most {
		return nil, fmt.Errorf("%d entries: want at most %d", len(parts), most)
	}
	for i, p := range parts {
		bad := func(why string) error {
			return fmt.Errorf("entry %d %s: %s; want \"TIME NODE,NODE\" (RFC 3339)", i+1, quote.Value(p), why)
		}
		at, names, ok := strings.Cut(p, " ")
		if !ok {
			return nil, bad("no space after the time")
		}
		t, err := time.Parse(time.RFC3339, at)
		if err != nil {
			return nil, bad("not an RFC 3339 time")
		}
		// As formatAbsent writes it back: UTC, to the second, and so a
		// year RFC 3339 can write (an offset can move year 0 into -1).
		if t = t.UTC().Truncate(time.Second); t.Year() < 1 || t.Year() > 9999 {
			return nil, bad("a time outside the years 1 to 9999")
		}
		list := strings.Split(names, ",")
		if len(out)+len(list) > most {
			return nil, fmt.Errorf("more than %d nodes", most)
		}
		for _, n := range list {
			if n == "" || strings.ContainsAny(n, " \t\n;") {
				return nil, bad(fmt.Sprintf("node name %s", quote.Value(n)))
			}
			out[n] = t
		}
	}
	return out, nil
}
