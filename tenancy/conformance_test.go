package tenancy

import (
	"fmt"
	"os"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// HiveD's own algorithm test (pkg/algorithm/hived_algorithm_test.go of
// microsoft/hivedscheduler) as PAL's conformance suite. Its design cluster
// is testdata/hived-design.yaml; its pod sequence, the leaf cells it
// expects, its preemptions, errors, bad-node and doomed-cell states,
// backtracking, safe relaxed splits and its reconfiguration are the rows
// of hivedChecks below, each with what HiveD's test expects and what PAL
// gives, written out. HiveD schedules pods one at a time; PAL a group (a
// gang) at once, so HiveD's second pod of a group is PAL's same decision
// (its next pod), and a pod of a preempting group is the group asking
// again. Every request runs with stateful preemption (SetStateful), as
// HiveD's. A row is
//
//   - exact: PAL's outcome is HiveD's, cell for cell;
//   - same: the same outcome on an equivalent cell, for the reason given;
//   - n/a: the case needs Kubernetes' scheduling phases or per-pod specs,
//     which the tenancy API does not have (PAL's nearest outcome is still
//     checked).
//
// The test fails when PAL's outcome is not the one written out, or an
// exact row's outcome is not HiveD's; it logs the counts, and fails
// unless docs/design.md quotes that line.

// check is one of HiveD's assertions and what PAL gives for it.
type check struct {
	id    string // HiveD's pod or step
	hived string // what HiveD's test expects
	pal   string // what PAL gives
	class string // exact, same or n/a
	why   string
}

const all16 = "[0 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15]"

var hivedChecks = []check{
	// A. Normal operations, in HiveD's order (casesThatShouldSucceed).
	{id: "pod1", hived: "0.0.1.0[0]", pal: "0.0.1.0[0]", class: "exact"},
	{id: "pod2", hived: "0.0.1.0[1]", pal: "0.0.1.0[1]", class: "exact"},
	{id: "pod3", hived: "0.0.1.0[8 9 10 11 12 13 14 15]", pal: "0.0.1.0[8 9 10 11 12 13 14 15]", class: "exact"},
	{id: "pod4", hived: "0.0.5.0[0]", pal: "0.0.5.0[0]", class: "exact"},
	{id: "pod5", hived: "0.0.3.0" + all16, pal: "0.0.3.0" + all16, class: "exact"},
	{id: "pod6", hived: "0.0.3.1" + all16, pal: "0.0.3.1" + all16, class: "exact"},
	{id: "pod7", hived: "wait", pal: "wait", class: "exact"},
	{id: "pod8", hived: "1.0.0.0[1 3 4 7 0 2 6]", pal: "1.0.0.1[0 1 2 3 4 5 6]", class: "same",
		why: "the 7-GPU pod takes the next free node of the DGX-1 rack after the 5-GPU pod's 1.0.0.2, in its own device order. " +
			"HiveD starts every node bad and marks them healthy one by one, which binds and releases doomed cells and leaves 1.0.0.0 " +
			"before 1.0.0.1 in its free list; PAL's nodes start healthy and its list keeps the config's order. With 1.0.0.1 bad, PAL " +
			"gives HiveD's exact answer (TestDesignNonStandardAddresses)"},
	{id: "pod9", hived: "1.0.0.2[0 1 2 3 4]", pal: "1.0.0.2[0 1 2 3 4]", class: "exact"},
	{id: "pod16", hived: "preempt [group5]", pal: "preempt [group5]", class: "exact"},
	{id: "pod17", hived: "preempt [group5]", pal: "preempt [group5]", class: "exact"},
	{id: "pod18", hived: "0.0.3.2" + all16, pal: "0.0.3.2" + all16, class: "exact"},
	{id: "pod19", hived: "0.0.3.3" + all16, pal: "0.0.3.3" + all16, class: "exact"},
	{id: "pod20", hived: "0.0.4.0" + all16, pal: "0.0.4.0" + all16, class: "exact"},
	{id: "pod21", hived: "0.0.4.1" + all16, pal: "0.0.4.1" + all16, class: "exact"},
	{id: "pod22", hived: "0.0.4.2" + all16, pal: "0.0.4.2" + all16, class: "exact"},
	{id: "pod23", hived: "0.0.4.3" + all16, pal: "0.0.4.3" + all16, class: "exact"},
	{id: "pod24", hived: "0.0.0.1[0 1]", pal: "0.0.0.0[0 1]", class: "same",
		why: "VC2's CT1 node cell binds the first free CT1 node; HiveD's start-up (all nodes bad, then healthy) leaves 0.0.0.1 first in its list, PAL's config order 0.0.0.0"},
	{id: "pod25", hived: "0.0.0.0[0 1] lazy [group15]", pal: "0.0.0.1[0 1] lazy [group15]", class: "same",
		why: "group15 is lazily preempted and VC2's cell is bound again, to the other CT1 node (the one without the demoted group): pod24's node swapped"},
	{id: "pod10", hived: "error", pal: "error", class: "exact"},
	{id: "pod11+pod12", hived: "error", pal: "error", class: "n/a",
		why: "two pods of 2 GPUs naming a group of one 8-GPU pod: PAL requests a whole gang, so pods cannot disagree with their group's spec; " +
			"asking again for a group that holds devices is PAL's nearest error (Kubernetes pods of one gang that differ are refused by the scheduler)"},
	{id: "pod13", hived: "error", pal: "error", class: "exact"},
	{id: "pod14", hived: "error", pal: "error", class: "exact"},
	{id: "pod15", hived: "error", pal: "error", class: "exact"},
	{id: "delete all", hived: "no groups", pal: "no groups", class: "exact"},

	// B. Suggested nodes (Request.Nodes) and backtracking.
	{id: "pod36", hived: "0.0.1.0[0]", pal: "0.0.1.0[0]", class: "exact"},
	{id: "pod37", hived: "0.0.3.0[0]", pal: "0.0.3.0[0]", class: "exact"},
	{id: "pod38", hived: "0.0.3.1[0]", pal: "0.0.3.1[0]", class: "exact"},
	{id: "pod27 without 0.0.3.1", hived: "wait", pal: "wait", class: "exact"},
	{id: "pod27", hived: "placed", pal: "placed", class: "exact"},
	{id: "pod33 filtering", hived: "no group", pal: "no group", class: "n/a",
		why: "Kubernetes' filtering phase (a placement found, no preemption state made); PAL's nearest, a request that may not preempt, leaves no state either"},
	{id: "pod33 without 0.0.3.1", hived: "no group", pal: "no group", class: "exact"},
	{id: "pod33", hived: "preempting", pal: "preempting", class: "exact"},
	{id: "pod33 without 0.0.3.1 again", hived: "no group", pal: "no group", class: "exact"},
	{id: "pod39", hived: "0.0.3.2" + all16, pal: "0.0.3.2" + all16, class: "exact"},
	{id: "pod40", hived: "0.0.4.3" + all16, pal: "0.0.4.3" + all16, class: "exact"},
	{id: "pod41", hived: "wait; group27 and group28 guaranteed", pal: "wait; group27 and group28 guaranteed", class: "exact"},

	// C. Stateful preemption.
	{id: "pod28", hived: "0.0.3.0" + all16, pal: "0.0.3.0" + all16, class: "exact"},
	{id: "pod29", hived: "preempt [group19]", pal: "preempt [group19]", class: "exact"},
	{id: "pod30", hived: "wait", pal: "wait", class: "exact"},
	{id: "pod31", hived: "preempt [group19]", pal: "preempt [group19]", class: "exact"},
	{id: "pod31 node", hived: "not pod29's", pal: "not pod29's", class: "exact"},
	{id: "pod32", hived: "wait", pal: "wait", class: "exact"},
	{id: "pod33 overrides", hived: "preempt [group19] cancelled [group20 group22]", pal: "preempt [group19] cancelled [group20 group22]", class: "exact"},
	{id: "pod34", hived: "0.0.3.0" + all16 + " cancelled [group24]", pal: "0.0.3.0" + all16 + " cancelled [group24]", class: "exact"},
	{id: "pod35", hived: "preempt [group25]", pal: "preempt [group25]", class: "exact"},
	{id: "pod35 deleted", hived: "0.0.3.0 group25 at 4, 0.0.3.1 free", pal: "0.0.3.0 group25 at 4, 0.0.3.1 free", class: "exact"},

	// D. Bad nodes and doomed cells (VC2 holds a 3-DGX2 node).
	{id: "0.0.2.1 bad: VC1", hived: "healthy", pal: "healthy", class: "exact"},
	{id: "0.0.2.1 bad: VC2", hived: "healthy", pal: "healthy", class: "exact"},
	{id: "pod43 on 0.0.2.2: VC1", hived: "bad", pal: "bad", class: "exact"},
	{id: "pod43 deleted: VC1", hived: "healthy", pal: "healthy", class: "exact"},
	{id: "0.0.2.2 bad: VC1", hived: "bad", pal: "bad", class: "exact"},
	{id: "0.0.2.2 bad: VC2", hived: "bad", pal: "bad", class: "exact"},
	{id: "0.0.2.2 healthy: VC1", hived: "healthy", pal: "healthy", class: "exact"},
	{id: "0.0.2.2 healthy: VC2", hived: "healthy", pal: "healthy", class: "exact"},
	{id: "pod42 deleted: VC1", hived: "bad", pal: "bad", class: "exact"},
	{id: "pod42 deleted: VC2", hived: "bad", pal: "bad", class: "exact"},

	// E. Safe relaxed buddy allocation.
	{id: "pod44", hived: "0.0.3.2" + all16, pal: "0.0.3.2" + all16, class: "exact"},
	{id: "pod45", hived: "0.0.4.2" + all16, pal: "0.0.4.2" + all16, class: "exact"},
	{id: "pod46", hived: "wait", pal: "wait", class: "exact"},

	// F. Reconfiguration: the groups of A, carried into the changed
	// config (testdata/hived-design-reconfigured.yaml).
	{id: "pod8 lazy", hived: "lazy", pal: "lazy", class: "exact"},
	{id: "pod9 lazy", hived: "lazy", pal: "lazy", class: "exact"},
	{id: "pod20 lazy", hived: "lazy", pal: "lazy", class: "exact"},
	{id: "pod21 lazy", hived: "lazy", pal: "lazy", class: "exact"},
	{id: "pod24 lazy", hived: "lazy", pal: "lazy", class: "exact"},
	{id: "reconfigured delete all", hived: "no groups", pal: "no groups", class: "exact"},

	// G. An infeasible initial assignment.
	{id: "invalid assignment", hived: "error", pal: "error", class: "exact"},
}

// conform runs HiveD's sequence on PAL and returns PAL's outcome of each
// check by id.
func conform(t *testing.T) map[string]string {
	got := map[string]string{}
	runNormal(t, got)
	runSuggested(t, got)
	runStatefulSequence(t, got)
	runBadNodes(t, got)
	runSafeRelaxed(t, got)
	runReconfigure(t, got)
	text := string(mustRead(t, "testdata/hived-design.yaml"))
	text = strings.Replace(text, "    - {cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE.DGX2-V100-NODE, cellNumber: 2}",
		"    - {cellType: CT1-NODE, cellNumber: 2}", 1)
	text = strings.Replace(text, "    - {cellType: 3-DGX2-V100-NODE.DGX2-V100-NODE, cellNumber: 2}",
		"    - {cellType: CT1-NODE.CT1, cellNumber: 2}", 1)
	if cfg, err := Parse("design.yaml", []byte(text)); err != nil {
		t.Fatal(err)
	} else if _, err := New(cfg); err != nil {
		got["invalid assignment"] = "error"
	}
	return got
}

func TestHiveDConformance(t *testing.T) {
	got := conform(t)
	count := map[string]int{}
	for _, c := range hivedChecks {
		g, ok := got[c.id]
		switch {
		case !ok:
			t.Errorf("%s: not run", c.id)
		case g != c.pal:
			t.Errorf("%s: PAL gives %q, want %q (HiveD %q)", c.id, g, c.pal, c.hived)
			count["differs"]++
			continue
		case c.class == "exact" && c.pal != c.hived:
			t.Errorf("%s: marked exact, but PAL's %q is not HiveD's %q", c.id, c.pal, c.hived)
		case c.class != "exact" && c.why == "":
			t.Errorf("%s: %s without a reason", c.id, c.class)
		}
		count[c.class]++
	}
	if len(got) != len(hivedChecks) {
		t.Errorf("%d outcomes for %d checks", len(got), len(hivedChecks))
	}
	line := fmt.Sprintf("HiveD conformance: %d checks: %d exact, %d same outcome, %d differ, %d not applicable",
		len(hivedChecks), count["exact"], count["same"], count["differs"], count["n/a"])
	t.Log(line)
	if count["differs"] > 0 {
		t.Errorf("%d checks differ from HiveD", count["differs"])
	}
	// The design notes quote the line; they must quote these counts.
	doc := strings.Join(strings.Fields(string(mustRead(t, "../docs/design.md"))), " ")
	if !strings.Contains(doc, "`"+line+"`") {
		t.Errorf("docs/design.md does not quote the counts this test prints: `%s`", line)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	data, err := readFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// outcome renders a decision as the checks read it: "wait", "preempt
// [victims]", or the pods' nodes and devices, with the preemptions it
// cancelled and the groups it lazily preempted.
func outcome(d Decision) string {
	out := "wait"
	switch {
	case d.Preempting:
		out = fmt.Sprintf("preempt %v", d.Victims)
	case d.Placed:
		var ps []string
		for _, p := range d.Pods {
			ps = append(ps, fmt.Sprintf("%s%v", p.Node, p.GPUs))
		}
		out = strings.Join(ps, " ")
	}
	if len(d.Cancelled) > 0 {
		c := append([]string(nil), d.Cancelled...)
		sort.Strings(c)
		out += fmt.Sprintf(" cancelled %v", c)
	}
	var lazy []string
	for _, g := range d.Demoted {
		if !slices.Contains(d.Victims, g) {
			lazy = append(lazy, g) // a lazily preempted group on the devices is a victim all the same, as in HiveD
		}
	}
	if len(lazy) > 0 {
		out += fmt.Sprintf(" lazy %v", lazy)
	}
	return out
}

func pod(d Decision, i int) string {
	if !d.Placed || i >= len(d.Pods) {
		return outcome(d)
	}
	return fmt.Sprintf("%s%v", d.Pods[i].Node, d.Pods[i].GPUs)
}

// design loads HiveD's design cluster, edited, with stateful preemption.
func design(t *testing.T, edit func(string) string) *Scheduler {
	s := loadDesign(t, edit)
	s.SetStateful(true)
	return s
}

// ask schedules and checks the whole state after it.
func ask(t *testing.T, s *Scheduler, r Request) Decision {
	t.Helper()
	d, err := s.Schedule(r)
	if err != nil {
		t.Fatalf("%s: %v", r.Group, err)
	}
	mustCheck(t, s)
	return d
}

const dgx2 = "DGX2-V100"

// normalRequests is HiveD's casesThatShouldSucceed as PAL requests, one
// per group (its pods together), keyed by the first pod's name.
var normalRequests = []struct {
	pods []string
	r    Request
}{
	{[]string{"pod1"}, Request{Group: "group1", VC: "VC1", Priority: 0, Pods: []int{1}, LeafType: dgx2, LazyPreemptable: true}},
	{[]string{"pod2"}, Request{Group: "group2", VC: "VC1", Priority: 1, Pods: []int{1}, LeafType: dgx2, LazyPreemptable: true}},
	{[]string{"pod3"}, Request{Group: "group3", VC: "VC1", Priority: 2, Pods: []int{8}, LeafType: dgx2, LazyPreemptable: true}},
	{[]string{"pod4"}, Request{Group: "group4", VC: "VC1", Priority: Opportunistic, Pods: []int{1}, LeafType: dgx2, LazyPreemptable: true}},
	{[]string{"pod5", "pod6"}, Request{Group: "group5", VC: "VC1", Priority: 1, Pods: []int{16, 16}, PinnedCell: "VC1-YQW-DGX2", LazyPreemptable: true}},
	{[]string{"pod7"}, Request{Group: "group7", VC: "VC2", Priority: 1, Pods: []int{8, 8, 8}, LeafType: "DGX1-P100", LazyPreemptable: true}},
	{[]string{"pod8", "pod9"}, Request{Group: "group9", VC: "VC2", Priority: 1, Pods: []int{7, 5}, LazyPreemptable: true}},
	{[]string{"pod16", "pod17"}, Request{Group: "group11", VC: "VC1", Priority: 2, Pods: []int{16, 16}, PinnedCell: "VC1-YQW-DGX2", LazyPreemptable: true}},
	{[]string{"pod18", "pod19"}, Request{Group: "group12", VC: "VC1", Priority: 1, Pods: []int{16, 16}, LeafType: dgx2, LazyPreemptable: true}},
	{[]string{"pod20", "pod21"}, Request{Group: "group13", VC: "VC1", Priority: 1, Pods: []int{16, 16}, LeafType: dgx2, LazyPreemptable: true}},
	{[]string{"pod22", "pod23"}, Request{Group: "group14", VC: "VC1", Priority: Opportunistic, Pods: []int{16, 16}, LeafType: dgx2, LazyPreemptable: true}},
	{[]string{"pod24"}, Request{Group: "group15", VC: "VC2", Priority: 0, Pods: []int{2}, LeafType: "CT1", LazyPreemptable: true}},
	{[]string{"pod25"}, Request{Group: "group16", VC: "VC2", Priority: 1, Pods: []int{2}, LeafType: "CT1"}},
}

// runSucceed runs casesThatShouldSucceed, recording each pod's outcome.
func runSucceed(t *testing.T, s *Scheduler, got map[string]string) {
	for _, n := range normalRequests {
		d := ask(t, s, n.r)
		for i, p := range n.pods {
			switch {
			case d.Preempting && i > 0:
				// A later pod of a preempting group: the group asks again.
				got[p] = outcome(ask(t, s, n.r))
			case n.r.Group == "group16":
				got[p] = pod(d, i) + fmt.Sprintf(" lazy %v", d.Demoted)
			default:
				got[p] = pod(d, i)
			}
		}
	}
}

// A: normal operations, failures, deleting everything.
func runNormal(t *testing.T, got map[string]string) {
	s := design(t, nil)
	runSucceed(t, s, got)
	before := s.dump()
	bad := map[string]Request{
		"pod10":       {Group: "group6", VC: "VC2", Priority: 1, Pods: []int{1}, LeafType: dgx2},
		"pod11+pod12": {Group: "group9", VC: "VC2", Priority: 1, Pods: []int{2}, LeafType: "DGX1-P100"},
		"pod13":       {Group: "group10", VC: "surprise!", Priority: 1, Pods: []int{1}, LeafType: "DGX1-P100"},
		"pod14":       {Group: "group10", VC: "VC2", Priority: 1, Pods: []int{1}, PinnedCell: "surprise!", LeafType: "DGX1-P100"},
		"pod15":       {Group: "group10", VC: "VC2", Priority: 1001, Pods: []int{1}, LeafType: "DGX1-P100"},
	}
	for id, r := range bad {
		if _, err := s.Schedule(r); err != nil {
			got[id] = "error"
		} else {
			got[id] = "accepted"
		}
	}
	if s.dump() != before {
		t.Fatal("a refused request changed the state")
	}
	got["delete all"] = deleteAll(t, s)
}

// deleteAll releases every group, newest first, and reports whether none
// is left and the free cells are a fresh scheduler's.
func deleteAll(t *testing.T, s *Scheduler) string {
	gs := s.Groups()
	for i := len(gs) - 1; i >= 0; i-- {
		if _, ok := s.groups[gs[i]]; !ok {
			continue
		}
		must(t, s.Release(gs[i]))
		mustCheck(t, s)
	}
	fresh, err := New(s.cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Groups()) > 0 || !reflect.DeepEqual(freeSets(s), freeSets(fresh)) {
		return fmt.Sprintf("groups %v left", s.Groups())
	}
	return "no groups"
}

// allBut lists the design cluster's nodes except some.
func allBut(s *Scheduler, except ...string) []string {
	var out []string
	for _, n := range s.nodeOrder {
		keep := true
		for _, e := range except {
			keep = keep && n != e
		}
		if keep {
			out = append(out, n)
		}
	}
	return out
}

// B: suggested nodes, and backtracking in binding.
func runSuggested(t *testing.T, got map[string]string) {
	s := design(t, nil)
	pinned := "VC1-YQW-DGX2"
	d := ask(t, s, Request{Group: "group1", VC: "VC1", Priority: Opportunistic, Pods: []int{1}, Nodes: []string{"0.0.1.0"}})
	got["pod36"] = pod(d, 0)
	must(t, s.Release("group1")) // HiveD's test does not keep pod36
	d = ask(t, s, Request{Group: "group1", VC: "VC1", Priority: 1, Pods: []int{1}, PinnedCell: pinned, Nodes: []string{"0.0.3.0"}})
	got["pod37"] = pod(d, 0)
	d = ask(t, s, Request{Group: "group2", VC: "VC1", Priority: 1, Pods: []int{1}, PinnedCell: pinned, Nodes: []string{"0.0.3.1"}})
	got["pod38"] = pod(d, 0)
	must(t, s.Release("group2")) // nor pod38
	must(t, s.Release("group1"))
	g18 := Request{Group: "group18", VC: "VC1", Priority: 1, Pods: []int{16, 16}, PinnedCell: pinned, Nodes: allBut(s, "0.0.3.1")}
	got["pod27 without 0.0.3.1"] = outcome(ask(t, s, g18))
	g18.Nodes = nil
	if d := ask(t, s, g18); d.Placed {
		got["pod27"] = "placed"
	}
	g24 := Request{Group: "group24", VC: "VC1", Priority: 3, Pods: []int{16, 16}, PinnedCell: pinned, LazyPreemptable: true, NoPreemption: true}
	exists := func() string {
		if g := s.groups["group24"]; g != nil {
			if g.state == preempting {
				return "preempting"
			}
			return "group"
		}
		return "no group"
	}
	ask(t, s, g24)
	got["pod33 filtering"] = exists()
	g24.NoPreemption, g24.Nodes = false, allBut(s, "0.0.3.1")
	ask(t, s, g24)
	got["pod33 without 0.0.3.1"] = exists()
	g24.Nodes = nil
	ask(t, s, g24)
	got["pod33"] = exists()
	g24.Nodes = allBut(s, "0.0.3.1")
	ask(t, s, g24)
	got["pod33 without 0.0.3.1 again"] = exists()

	// Backtracking: VC1 without its two rack nodes, with three node pairs.
	s = design(t, func(text string) string {
		text = strings.Replace(text, "{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE.DGX2-V100-NODE, cellNumber: 2}",
			"{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE.DGX2-V100-NODE, cellNumber: 0}", 1)
		return strings.Replace(text, "{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE, cellNumber: 1}",
			"{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE, cellNumber: 3}", 1)
	})
	d = ask(t, s, Request{Group: "group27", VC: "VC1", Priority: 1, Pods: []int{16, 16}, LeafType: dgx2, LazyPreemptable: true,
		Nodes: []string{"0.0.3.2", "0.0.3.3"}})
	got["pod39"] = pod(d, 0)
	d = ask(t, s, Request{Group: "group28", VC: "VC1", Priority: 1, Pods: []int{16}, LeafType: dgx2, LazyPreemptable: true,
		Nodes: []string{"0.0.4.3"}})
	got["pod40"] = pod(d, 0)
	d = ask(t, s, Request{Group: "group29", VC: "VC1", Priority: 2, Pods: []int{16, 16, 16, 16}, LeafType: dgx2, LazyPreemptable: true,
		Nodes: []string{"0.0.3.2", "0.0.3.3", "0.0.4.3"}})
	g27p, g27d, _ := s.GroupInfo("group27")
	g28p, g28d, _ := s.GroupInfo("group28")
	if outcome(d) == "wait" && g27p == 1 && !g27d && g28p == 1 && !g28d {
		got["pod41"] = "wait; group27 and group28 guaranteed"
	} else {
		got["pod41"] = fmt.Sprintf("%s; group27 %d %v, group28 %d %v", outcome(d), g27p, g27d, g28p, g28d)
	}
}

// C: stateful preemption in the pinned DGX-2 pair.
func runStatefulSequence(t *testing.T, got map[string]string) {
	s := design(t, nil)
	pin := func(group string, prio int, pods []int, lazy bool) Request {
		return Request{Group: group, VC: "VC1", Priority: prio, Pods: pods, PinnedCell: "VC1-YQW-DGX2", LazyPreemptable: lazy}
	}
	got["pod28"] = pod(ask(t, s, pin("group19", 1, []int{16, 16}, false)), 0)
	d29 := ask(t, s, pin("group20", 2, []int{16}, true))
	got["pod29"] = outcome(d29)
	got["pod30"] = outcome(ask(t, s, pin("group21", 1, []int{16}, true)))
	d31 := ask(t, s, pin("group22", 2, []int{16}, true))
	got["pod31"] = outcome(d31)
	if len(d29.Pods) == 1 && len(d31.Pods) == 1 && d29.Pods[0].Node != d31.Pods[0].Node {
		got["pod31 node"] = "not pod29's"
	}
	got["pod32"] = outcome(ask(t, s, pin("group23", 2, []int{16}, true)))
	d := ask(t, s, pin("group24", 3, []int{16, 16}, true))
	got["pod33 overrides"] = outcome(d)
	for _, g := range []string{"group20", "group22"} {
		if _, ok := s.groups[g]; ok {
			got["pod33 overrides"] += " " + g + " left"
		}
	}
	must(t, s.Release("group19")) // pod28 deleted
	mustCheck(t, s)
	got["pod34"] = outcome(ask(t, s, pin("group25", 4, []int{16}, false)))
	got["pod35"] = outcome(ask(t, s, pin("group26", 5, []int{16, 16}, true)))
	must(t, s.Release("group26")) // deleted before its preemption is done
	mustCheck(t, s)
	prio, _, ok := s.GroupInfo("group25")
	where, _ := s.Placement("group25")
	free := s.byNode["0.0.3.1"][0].used == 0
	if _, left := s.groups["group26"]; ok && !left && free && len(where) == 1 && where[0].Node == "0.0.3.0" {
		got["pod35 deleted"] = fmt.Sprintf("0.0.3.0 group25 at %d, 0.0.3.1 free", prio)
	}
}

// freeHealth says whether the free (unused) cells a VC holds in a chain
// are all healthy, all bad (doomed), or a mix.
func freeHealth(s *Scheduler, vcName, chain string) string {
	bad, free := 0, 0
	for _, vcc := range s.byVC[vcName].chains {
		if vcc.chain.Name != chain {
			continue
		}
		for _, v := range vcc.pre {
			if v.used > 0 {
				continue
			}
			free++
			if v.phys != nil && v.phys.bad > 0 {
				bad++
			}
		}
	}
	switch {
	case bad == 0:
		return "healthy"
	case bad == free:
		return "bad"
	}
	return fmt.Sprintf("%d of %d bad", bad, free)
}

// D: bad nodes and doomed cells; VC2's third cell is a node of the
// 3-node DGX-2 rack instead of a CT1 node.
func runBadNodes(t *testing.T, got map[string]string) {
	s := design(t, func(text string) string {
		return strings.Replace(text, "    - {cellType: CT1-NODE, cellNumber: 1}", "    - {cellType: 3-DGX2-V100-NODE.DGX2-V100-NODE, cellNumber: 1}", 1)
	})
	const rack = "3-DGX2-V100-NODE"
	state := func(id string, vcs ...string) {
		mustCheck(t, s)
		for _, vc := range vcs {
			got[id+": "+vc] = freeHealth(s, vc, rack)
		}
	}
	if d := ask(t, s, Request{Group: "group30", VC: "VC1", Priority: 0, Pods: []int{16}, LeafType: dgx2, Nodes: []string{"0.0.2.0"}}); pod(d, 0) != "0.0.2.0"+all16 {
		t.Fatalf("pod42: %v", d)
	}
	must(t, s.SetNodeHealth("0.0.2.1", false))
	state("0.0.2.1 bad", "VC1", "VC2")
	if d := ask(t, s, Request{Group: "group31", VC: "VC2", Priority: 0, Pods: []int{16}, LeafType: dgx2, Nodes: []string{"0.0.2.2"}}); pod(d, 0) != "0.0.2.2"+all16 {
		t.Fatalf("pod43: %v", d)
	}
	state("pod43 on 0.0.2.2", "VC1")
	must(t, s.Release("group31"))
	state("pod43 deleted", "VC1")
	must(t, s.SetNodeHealth("0.0.2.2", false))
	state("0.0.2.2 bad", "VC1", "VC2")
	must(t, s.SetNodeHealth("0.0.2.2", true))
	state("0.0.2.2 healthy", "VC1", "VC2")
	must(t, s.SetNodeHealth("0.0.2.0", false))
	must(t, s.SetNodeHealth("0.0.2.2", false))
	must(t, s.Release("group30"))
	state("pod42 deleted", "VC1", "VC2")
}

// E: safe relaxed buddy allocation; VC1 holds four rack nodes of the
// 4-node racks, VC2 one node pair there.
func runSafeRelaxed(t *testing.T, got map[string]string) {
	s := design(t, func(text string) string {
		text = strings.Replace(text, "{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE.DGX2-V100-NODE, cellNumber: 2}",
			"{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE.DGX2-V100-NODE, cellNumber: 4}", 1)
		text = strings.Replace(text, "{cellType: DGX2-V100-NODE, cellNumber: 2}", "{cellType: DGX2-V100-NODE, cellNumber: 0}", 1)
		text = strings.Replace(text, "{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE, cellNumber: 1}",
			"{cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE, cellNumber: 0}", 1)
		return strings.Replace(text, "    - {cellType: CT1-NODE, cellNumber: 1}", "    - {cellType: 4-DGX2-V100-NODE.2-DGX2-V100-NODE, cellNumber: 1}", 1)
	})
	nodes := []string{"0.0.3.2", "0.0.3.3", "0.0.4.2", "0.0.4.3"}
	got["pod44"] = pod(ask(t, s, Request{Group: "group32", VC: "VC1", Priority: 0, Pods: []int{16}, LeafType: dgx2, Nodes: nodes}), 0)
	must(t, s.SetNodeHealth("0.0.3.3", false))
	got["pod45"] = pod(ask(t, s, Request{Group: "group33", VC: "VC1", Priority: 0, Pods: []int{16}, LeafType: dgx2, Nodes: nodes}), 0)
	must(t, s.SetNodeHealth("0.0.4.3", false))
	got["pod46"] = outcome(ask(t, s, Request{Group: "group34", VC: "VC1", Priority: 0, Pods: []int{16}, LeafType: dgx2,
		Nodes: []string{"0.0.3.2", "0.0.3.3", "0.0.4.0", "0.0.4.1", "0.0.4.2", "0.0.4.3"}}))
}

// F: the groups of A carried into the changed config.
func runReconfigure(t *testing.T, got map[string]string) {
	s := design(t, nil)
	runSucceed(t, s, map[string]string{})
	cfg, err := LoadFile("testdata/hived-design-reconfigured.yaml")
	if err != nil {
		t.Fatal(err)
	}
	n, _, err := s.Reconfigure(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mustCheck(t, n)
	for id, group := range map[string]string{"pod8": "group9", "pod9": "group9", "pod20": "group13", "pod21": "group13", "pod24": "group15"} {
		if _, demoted, ok := n.GroupInfo(group); ok && demoted {
			got[id+" lazy"] = "lazy"
		} else {
			got[id+" lazy"] = fmt.Sprintf("held %v demoted %v", ok, demoted)
		}
	}
	got["reconfigured delete all"] = deleteAll(t, n)
}

func readFile(path string) ([]byte, error) { return os.ReadFile(path) }
