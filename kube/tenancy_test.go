package kube

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/workload"
	"k8s.io/apimachinery/pkg/runtime"
)

func vcAnn(vc, prio string) map[string]string {
	a := map[string]string{AnnVC: vc}
	if prio != "" {
		a[AnnPriority] = prio
	}
	return a
}

// hivedWorld is a world of nodes 4-GPU nodes under tenancy hived with
// the cells file cells (testCfg, then opts); with a cells ConfigMap
// (withCellsConfigMap) the ConfigMap holds the file's cells from the
// start. *at is the time of its first round.
func hivedWorld(t *testing.T, cells string, nodes int, opts ...func(*Config)) (*world, *time.Time) {
	t.Helper()
	cfg := testCfg()
	cfg.Tenancy, cfg.Cells = "hived", cells
	for _, o := range opts {
		o(&cfg)
	}
	w := newWorld(t, cfg, 1, nodes, 4)
	if cfg.CellsConfigMap != "" {
		text, err := os.ReadFile(cells)
		if err != nil {
			t.Fatal(err)
		}
		w.setCells(cfg, string(text))
	}
	at := time.Unix(1_700_000_000, 0)
	return w, &at
}

// lasPal has hivedWorld schedule under las with pal placement.
func lasPal(c *Config) { c.Scheduler, c.Placement = "las", "pal" }

// withCellsConfigMap has hivedWorld watch the cells ConfigMap pal-cells.
func withCellsConfigMap(c *Config) { c.CellsConfigMap = "pal-cells" }

// cellsFile writes the cells text to a file of t's and returns its path.
func cellsFile(t *testing.T, text string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "cells.yaml")
	if err := os.WriteFile(f, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	return f
}

// nodeCells is the cells text of one node cell type (4 GPUs) on nodes n0
// to n<nodes-1> and VCs A, B, C, ... of vcCells[i] node cells each.
func nodeCells(nodes int, vcCells ...int) string {
	var b strings.Builder
	b.WriteString("physicalCluster:\n  cellTypes:\n    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}\n  physicalCells:\n")
	for i := range nodes {
		fmt.Fprintf(&b, "  - {cellType: NODE, cellAddress: n%d}\n", i)
	}
	b.WriteString("virtualClusters:\n")
	for i, n := range vcCells {
		fmt.Fprintf(&b, "  %c: {virtualCells: [{cellType: NODE, cellNumber: %d}]}\n", 'A'+i, n)
	}
	return b.String()
}

// Two VCs of one 4-GPU node each under hived. FIFO by name: a-big (4
// GPUs, A) binds A's node; a-more (1 GPU, A) waits, A being full, though
// B's node has room (B's guarantee); b-0 and b-1 (2 GPUs each, B) share
// B's node. A pod naming an unknown VC and one with a malformed priority
// stay pending, each with an event saying why, and the others are served.
// Buddy allocation hands out n0 first, so A (first to ask) gets n0.
func TestTenancyTwoVCs(t *testing.T) {
	objs := []runtime.Object{node("n0", 4), node("n1", 4),
		pod("a-big", 4, vcAnn("A", "10"), ""), pod("a-more", 1, vcAnn("A", ""), ""),
		pod("b-0", 2, vcAnn("B", "0"), ""), pod("b-1", 2, vcAnn("B", ""), ""),
		pod("c-0", 1, vcAnn("C", ""), ""), pod("d-0", 1, vcAnn("B", "high"), ""),
		// A hostile user's values of 100 kB (of bytes %q writes as four
		// characters): their messages still say what is wrong in a line.
		pod("e-0", 1, vcAnn(strings.Repeat("\x98", 100_000), ""), ""), pod("f-0", 1, vcAnn("B", strings.Repeat("9", 100_000)), "")}
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())

	want := map[string]string{"a-big": "n0", "b-0": "n1", "b-1": "n1"}
	if len(fc.binds) != len(want) {
		t.Fatalf("binds %v, want %v", keys(fc.binds), want)
	}
	for p, n := range want {
		if b := fc.binds[p]; b == nil || b.Target.Name != n {
			t.Errorf("%s bound to %v, want %s", p, b, n)
		}
	}
	if got := fc.binds["a-big"].Annotations[AnnGPUIndices]; got != "0,1,2,3" {
		t.Errorf("a-big on GPUs %s", got)
	}
	for key, why := range map[string]string{
		"ns/pod:c-0": `annotation pal.io/vc="C": unknown VC (the cells define A, B)`,
		"ns/pod:d-0": `annotation pal.io/priority="high": want -1 (opportunistic) or 0..1000`,
	} {
		if s.lastWhy[key] != why {
			t.Errorf("%s waits with %q, want %q", key, s.lastWhy[key], why)
		}
	}
	for key, want := range map[string]string{"ns/pod:e-0": `... (100000 bytes): unknown VC (the cells define A, B)`, "ns/pod:f-0": `... (100000 bytes): want -1 (opportunistic) or 0..1000`} {
		if why := s.lastWhy[key]; len(why) > 512 || !strings.HasSuffix(why, want) {
			t.Errorf("%s waits with %d bytes: %.200q..., want it to end %q", key, len(why), why, want)
		}
	}
	if !strings.Contains(s.lastWhy["ns/pod:a-more"], "waits at queue position") {
		t.Errorf("a-more: %q", s.lastWhy["ns/pod:a-more"])
	}
	// A second round before the informers show the binds: the cells keep
	// the gangs where they are and nothing new is bound.
	roundWait(s, context.Background(), time.Now())
	if fc.calls != 3 {
		t.Errorf("%d bind calls after the second round, want 3", fc.calls)
	}
	// The same pods without tenancy: a-more fits beside b-0 and b-1.
	cs2, fc2 := newFake(t, objs...)
	cfg.Tenancy, cfg.Cells = "none", ""
	s2 := startRounds(t, cfg, cs2)
	roundWait(s2, context.Background(), time.Now())
	if fc2.binds["a-more"] == nil {
		t.Errorf("without tenancy a-more waits too: binds %v", keys(fc2.binds))
	}
}

func TestTenancyConfigErrors(t *testing.T) {
	for _, c := range []struct{ tenancy, cells, want string }{
		{"hived", "", "field cells: tenancy hived needs a cells file"},
		{"fair", "testdata/two-vcs.yaml", `field tenancy: "fair"`},
		{"none", "testdata/two-vcs.yaml", "field cells: set, but tenancy is none"},
		{"quota", "testdata/missing.yaml", "field cells: "},
	} {
		cfg := DefaultConfig()
		cfg.Tenancy, cfg.Cells = c.tenancy, c.cells
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	for _, c := range []struct{ tenancy, cells, want string }{
		{"quota", "testdata/two-vcs.yaml", "field cellsConfigMap: tenancy quota does not change its cells under running gangs; use hived, hived-pm or hived-speed"},
		{"none", "", "field cellsConfigMap: set, but tenancy is none"},
	} {
		cfg := DefaultConfig()
		cfg.Tenancy, cfg.Cells, cfg.CellsConfigMap = c.tenancy, c.cells, "pal-cells"
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v", c, err)
		}
	}
	// hived-speed is a HiveD stage that balances speeds, cells ConfigMap
	// and all.
	cfg := DefaultConfig()
	cfg.Tenancy, cfg.Cells, cfg.CellsConfigMap = "hived-speed", "testdata/two-vcs.yaml", "pal-cells"
	if err := cfg.Validate(); err != nil {
		t.Fatal(err)
	}
	l, err := cfg.validateTenancy()
	if err != nil {
		t.Fatal(err)
	}
	st, err := newTenancyStage(cfg.Tenancy, l, func() (policy.Placer, error) { return place.New("packed-sticky") })
	if err != nil || st.hived == nil || st.hived.Name() != "hived-speed" {
		t.Fatalf("hived-speed stage: %v, %v", st, err)
	}
}

// The same pods under quota: each VC holds at most its 4 GPUs, so a-more
// waits once a-big holds A's quota, and the bad pods wait as under hived.
func TestTenancyQuota(t *testing.T) {
	objs := []runtime.Object{node("n0", 4), node("n1", 4),
		pod("a-big", 4, vcAnn("A", ""), ""), pod("a-more", 1, vcAnn("A", ""), ""),
		pod("b-0", 2, vcAnn("B", ""), ""), pod("c-0", 1, vcAnn("C", ""), "")}
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "quota", "testdata/two-vcs.yaml"
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())
	if got := keys(fc.binds); !slices.Equal(got, []string{"a-big", "b-0"}) {
		t.Errorf("binds %v, want a-big and b-0", got)
	}
	if !strings.Contains(s.lastWhy["ns/pod:c-0"], "unknown VC") {
		t.Errorf("c-0: %q", s.lastWhy["ns/pod:c-0"])
	}
}

// A gang annotated with its VC's pinned cell binds inside it; one of a
// VC whose cells are all pinned that names none, or names another VC's,
// waits saying which annotation to fix.
func TestTenancyPinnedCell(t *testing.T) {
	pin := func(vc, cell string) map[string]string {
		a := vcAnn(vc, "")
		if cell != "" {
			a[AnnPinnedCell] = cell
		}
		return a
	}
	objs := []runtime.Object{node("n0", 4), node("n1", 4),
		pod("a-0", 4, pin("A", ""), ""), pod("b-pin", 4, pin("B", "B-NODE"), ""),
		pod("b-none", 1, pin("B", ""), ""), pod("a-steal", 1, pin("A", "B-NODE"), "")}
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/pinned.yaml"
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())
	want := map[string]string{"a-0": "n0", "b-pin": "n1"}
	if len(fc.binds) != len(want) {
		t.Fatalf("binds %v, want %v", keys(fc.binds), want)
	}
	for p, n := range want {
		if b := fc.binds[p]; b == nil || b.Target.Name != n {
			t.Errorf("%s bound to %v, want %s", p, b, n)
		}
	}
	for key, why := range map[string]string{
		"ns/pod:b-none":  "annotation pal.io/pinned-cell: VC B's cells are all pinned (pinned cells B-NODE): name one in pal.io/pinned-cell",
		"ns/pod:a-steal": `annotation pal.io/pinned-cell: pinned cell "B-NODE" is not VC A's (VC A has no pinned cells)`,
	} {
		if s.lastWhy[key] != why {
			t.Errorf("%s waits with %q, want %q", key, s.lastWhy[key], why)
		}
	}
}

// A scheduler that restarts finds a gang of VC A running on n1 (its
// bind-info written by the scheduler before). The cells take it back as
// A's, as HiveD re-reads an allocated pod's placement when it restarts:
// A's one cell is in use, so a-new waits, and B's guarantee is whole, so
// b-0 binds n0. Before, the running gang stayed outside the cells: A's
// cell looked free, a-new took n0 (A held 8 GPUs of its 4) and b-0 waited
// for a-old to end.
func TestTenancyRestartAdoptsRunningGangs(t *testing.T) {
	old := pod("a-old", 4, vcAnn("A", ""), "n1")
	old.Annotations[AnnGPUIndices] = "0,1,2,3"
	objs := []runtime.Object{node("n0", 4), node("n1", 4), old,
		pod("a-new", 4, vcAnn("A", ""), ""), pod("b-0", 4, vcAnn("B", ""), "")}
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	s := startRounds(t, cfg, cs)
	for range 2 {
		roundWait(s, context.Background(), time.Now())
	}
	if got := keys(fc.binds); !slices.Equal(got, []string{"b-0"}) {
		t.Fatalf("binds %v, want b-0 only (A's cell runs a-old)", got)
	}
	if b := fc.binds["b-0"]; b.Target.Name != "n0" {
		t.Errorf("b-0 bound to %s, want n0", b.Target.Name)
	}
	if !strings.Contains(s.lastWhy["ns/pod:a-new"], "waits at queue position") {
		t.Errorf("a-new: %q", s.lastWhy["ns/pod:a-new"])
	}
}

// A restart finds VC A running two gangs on its one cell's worth (the
// second was lazily preempted before, or A's cells shrank while the
// scheduler was down): the first is A's again, the second runs on lazily
// preempted, and B's gang, whose cell must bind its node, evicts it
// rather than waiting for it to end.
func TestTenancyRestartLazilyPreemptsOverQuota(t *testing.T) {
	first, second := pod("a-old", 4, vcAnn("A", ""), "n1"), owned(pod("a-two", 4, vcAnn("A", ""), "n0"))
	first.Annotations[AnnGPUIndices], second.Annotations[AnnGPUIndices] = "0,1,2,3", "0,1,2,3"
	objs := []runtime.Object{node("n0", 4), node("n1", 4), first, second, pod("b-0", 4, vcAnn("B", ""), "")}
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())
	if len(fc.binds) != 0 || !slices.Equal(fc.evicted, []string{"a-two"}) {
		t.Fatalf("binds %v, evicted %v; want a-two evicted for b-0", keys(fc.binds), fc.evicted)
	}
}

// A Job's pods stay after they succeed. Under hived a gang all of whose
// pods finished leaves its cells: b1's end frees B's cell, so b2 (B)
// binds n1 where b1 ran. Before, the finished gang kept its cells while
// its pods existed, and B's layer, which no longer saw it, placed b2 on
// them: the commit failed and no round placed anything ("the placement
// failed: tenant: tenancy: group 3: leaf used by group 2").
func TestTenancyFinishedGangLeavesItsCells(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	w := newWorld(t, cfg, 1, 2, 4)
	at := time.Unix(1_700_000_000, 0)
	step := func(what, want string) { t.Helper(); w.expect(&at, what, want) }
	w.create("a1", 4, vcAnn("A", ""), at)
	w.create("b1", 4, vcAnn("B", ""), at)
	step("round 1", "ns/a1@n0[0,1,2,3] ns/b1@n1[0,1,2,3]")
	w.finish("ns/b1")
	step("b1 finished", "ns/a1@n0[0,1,2,3]")
	w.create("b2", 4, vcAnn("B", ""), at)
	step("b2 arrives", "ns/a1@n0[0,1,2,3] ns/b2@n1[0,1,2,3]")
	if strings.Contains(w.log.String(), "level=ERROR") {
		t.Errorf("errors in the log:\n%s", w.log.String())
	}
}

// A gang of two pods of which one finished still holds its cells (its
// other pod runs), but the round's order no longer has it: B's layer must
// not offer its leaves to b2, which waits for the gang's end and then
// binds. Before, b2 was placed on them and the commit's fault failed
// every round.
func TestTenancyLeavingGangKeepsItsLeaves(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	w := newWorld(t, cfg, 1, 2, 4)
	at := time.Unix(1_700_000_000, 0)
	step := func(what, want string) { t.Helper(); w.expect(&at, what, want) }
	g := func() map[string]string { a := gangAnn("g", 2); a[AnnVC] = "B"; return a }
	w.create("g-0", 2, g(), at)
	w.create("g-1", 2, g(), at)
	w.create("a1", 4, vcAnn("A", ""), at)
	step("round 1", "ns/a1@n0[0,1,2,3] ns/g-0@n1[0,1] ns/g-1@n1[2,3]")
	w.finish("ns/g-0")
	step("g-0 finished", "ns/a1@n0[0,1,2,3] ns/g-1@n1[2,3]")
	w.create("b2", 2, vcAnn("B", ""), at)
	step("b2 arrives", "ns/a1@n0[0,1,2,3] ns/g-1@n1[2,3]")
	if strings.Contains(w.log.String(), "level=ERROR") {
		t.Fatalf("errors in the log:\n%s", w.log.String())
	}
	w.finish("ns/g-1")
	step("g-1 finished", "ns/a1@n0[0,1,2,3] ns/b2@n1[0,1]")
}

// movePlacer answers fixed sets, whatever the jobs hold.
type movePlacer [][]int

func (m movePlacer) Name() string { return "move" }
func (m movePlacer) Sticky() bool { return false }
func (m movePlacer) Place(_ *policy.Env, order []*workload.Job) [][]int {
	return slices.Clone(m[:len(order)])
}

// A VC's placer moves running r from GPUs 0,1 to 2,3 and puts new n on
// 0,1: keepRunning keeps r where it runs and n waits; a job placed on
// GPUs no kept gang holds, and a preemption, stand.
func TestKeepRunningInsideVC(t *testing.T) {
	r := &workload.Job{Spec: workload.Spec{ID: 1, GPUs: 2}, GPUsHeld: []int{1, 0}}
	n := &workload.Job{Spec: workload.Spec{ID: 2, GPUs: 2}}
	o := &workload.Job{Spec: workload.Spec{ID: 3, GPUs: 1}}
	p := &workload.Job{Spec: workload.Spec{ID: 4, GPUs: 1}, GPUsHeld: []int{5}}
	got := keepRunning{movePlacer{{2, 3}, {0, 1}, {4}, nil}}.Place(nil, []*workload.Job{r, n, o, p})
	want := [][]int{{1, 0}, nil, {4}, nil}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	// Nothing moved: the placer's answer as it is.
	got = keepRunning{movePlacer{{0, 1}, {2, 3}}}.Place(nil, []*workload.Job{r, n})
	if want := [][]int{{0, 1}, {2, 3}}; !reflect.DeepEqual(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
}
