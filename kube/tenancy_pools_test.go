package kube

import (
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// bindsOf runs one round of a hived scheduler on objs with the cells file
// and returns each bound pod's node and GPU indices.
func bindsOf(t *testing.T, cells string, objs ...runtime.Object) (map[string]string, *Scheduler) {
	t.Helper()
	cs, fc := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", cells
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())
	out := map[string]string{}
	for p, b := range fc.binds {
		out[p] = b.Target.Name + " " + b.Annotations[AnnGPUIndices]
	}
	return out, s
}

func with(a map[string]string, kv ...string) map[string]string {
	out := maps.Clone(a)
	for i := 0; i+1 < len(kv); i += 2 {
		out[kv[i]] = kv[i+1]
	}
	return out
}

// The two cases of pinned cells and leaf types beside ordinary cells
// through pal-kube scheduler's round (pods in name order, FIFO, one round; the
// same cells and jobs as pal sim's, derived by hand in policy/tenant's
// pools_test.go). Three 4-GPU nodes, n1 pinned as A-PIN, VC A = one node
// cell + A-PIN: the two 2-GPU pods naming A-PIN share n1, the unpinned
// 4-GPU pod gets A's node cell, bound to n0, B's pod n2, and the second
// unpinned pod of A waits (A's node is taken; A-PIN is not for it). Nodes
// k0 (K80) and v0 (V100) in one VC: the V100 pod runs on v0, the pod
// naming nothing on the first type with room (K80: k0 0,1), the K80 pod on
// k0 2,3.
func TestTenancyPoolsInRound(t *testing.T) {
	a, b := vcAnn("A", ""), vcAnn("B", "")
	got, s := bindsOf(t, "../tenancy/testdata/pools-pinned.yaml", node("n0", 4), node("n1", 4), node("n2", 4),
		pod("j0", 2, with(a, AnnPinnedCell, "A-PIN"), ""), pod("j1", 2, with(a, AnnPinnedCell, "A-PIN"), ""),
		pod("j2", 4, a, ""), pod("j3", 4, b, ""), pod("j4", 4, a, ""))
	want := map[string]string{"j0": "n1 0,1", "j1": "n1 2,3", "j2": "n0 0,1,2,3", "j3": "n2 0,1,2,3"}
	if !maps.Equal(got, want) {
		t.Errorf("pinned: binds %v, want %v", got, want)
	}
	if why := s.lastWhy["ns/pod:j4"]; why == "" {
		t.Errorf("j4 waits without a reason")
	}
	got, _ = bindsOf(t, "../tenancy/testdata/pools-skus.yaml", node("k0", 4), node("v0", 4),
		pod("j0", 4, with(a, AnnLeafCellType, "V100"), ""), pod("j1", 2, a, ""), pod("j2", 2, with(a, AnnLeafCellType, "K80"), ""))
	want = map[string]string{"j0": "v0 0,1,2,3", "j1": "k0 0,1", "j2": "k0 2,3"}
	if !maps.Equal(got, want) {
		t.Errorf("leaf types: binds %v, want %v", got, want)
	}
}

// A gang's node selector is the set of nodes its decisions may use
// (HiveD's suggested nodes). Two 4-GPU nodes, VC A and VC B one node cell
// each: buddy allocation would bind A's cell to n0 first, but a-0 selects
// zone=b, which only n1 has, so A's cell binds n1. A gang whose pods
// disagree on their selector waits saying so.
func TestTenancyNodeSelector(t *testing.T) {
	n0, n1 := node("n0", 4), node("n1", 4)
	n0.Labels, n1.Labels = map[string]string{"zone": "a"}, map[string]string{"zone": "b"}
	sel := func(p *corev1.Pod, zone string) *corev1.Pod {
		p.Spec.NodeSelector = map[string]string{"zone": zone}
		return p
	}
	got, s := bindsOf(t, "testdata/two-vcs.yaml", n0, n1, sel(pod("a-0", 4, vcAnn("A", ""), ""), "b"),
		sel(pod("g-0", 1, gangAnn("g", 2, AnnVC, "B"), ""), "a"), sel(pod("g-1", 1, gangAnn("g", 2, AnnVC, "B"), ""), "b"))
	if want := map[string]string{"a-0": "n1 0,1,2,3"}; !maps.Equal(got, want) {
		t.Errorf("binds %v, want %v", got, want)
	}
	if why := s.lastWhy["ns/g"]; why != "pods g-0 and g-1 of the gang differ in their node selector or node affinity" {
		t.Errorf("g waits with %q", why)
	}
}

// A guaranteed gang waits while its victims' pods terminate, on a world
// whose kubelets take their time (the pods stay, being deleted, until the
// test removes them). Two 4-GPU nodes, VC A and VC B one node cell each:
//
//  1. b (B, 4 GPUs) binds B's cell to n0; o (A, opportunistic, 4 GPUs)
//     takes n1.
//  2. g (A, 4 GPUs) needs A's cell, and n1 is the only free node: o is
//     evicted; g is not bound.
//  3. o is still terminating: g still waits, and nothing else is bound.
//  4. o is gone: g binds n1.
//
// No GPU is ever given twice (world.check after every round).
func TestTenancyPreemptorWaitsForVictims(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	w := newWorld(t, cfg, 1, 2, 4)
	at := time.Unix(1_700_000_000, 0)
	step := func(what, want string) { t.Helper(); w.expect(&at, what, want) }
	w.create("b", 4, vcAnn("B", ""), at)
	w.create("o", 4, vcAnn("A", "-1"), at)
	step("round 1", "ns/b@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
	w.create("g", 4, vcAnn("A", ""), at)
	step("round 2", "ns/b@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
	if w.pods["ns/o"].DeletionTimestamp == nil {
		t.Fatal("o was not evicted")
	}
	// The eviction names its cause: g needs the cells o ran on.
	if want := `why="preempted at queue position 2 under fifo: it ran as opportunistic on the cells that pod ns/g (guaranteed) needs; it binds once this gang's pods are gone"`; !strings.Contains(w.log.String(), want) {
		t.Errorf("o's eviction does not say %s:\n%s", want, w.log.String())
	}
	step("round 3", "ns/b@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
	// g holds its cells all along, waiting for o (one victim still on them).
	if pre := w.s.ten.hived.Cells().Preempting(); len(pre) != 1 || len(slices.Collect(maps.Values(pre))[0]) != 1 {
		t.Fatalf("round 3: preempting %v, want g waiting for o", pre)
	}
	w.remove("ns/o")
	step("round 4", "ns/b@n0[0,1,2,3] ns/g@n1[0,1,2,3]")
}

// setCells puts the cells text in the watched ConfigMap, as its informer
// would show a new version.
func (w *world) setCells(cfg Config, text string) {
	w.mu.Lock()
	w.rv++
	rv := fmt.Sprint(w.rv)
	w.mu.Unlock()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: cfg.CellsConfigMap, ResourceVersion: rv},
		Data: map[string]string{CellsKey: text}}
	idx := w.s.nsFactory.Core().V1().ConfigMaps().Informer().GetIndexer()
	if err := idx.Update(cm); err != nil {
		w.t.Fatal(err)
	}
}

// A VC shrinks under running gangs through the cells ConfigMap, by hand.
// Nodes n0-n2 of 4 GPUs; the cells file (and the ConfigMap at first) give
// VC A two node cells and B one, the change A one and B two.
//
//  1. a1, a2 (A) and b1 (B), 4 GPUs each, bind n0, n1 and n2.
//  2. The change: a1 keeps A's only cell (it started first); a2 no longer
//     fits A and is lazily preempted: it runs on, evicted by nothing.
//  3. An infeasible change (A three nodes) is refused, naming the
//     ConfigMap, line and field; the change of step 2 stays in force.
//  4. b2 (B, 4 GPUs) binds B's second cell to the only node left, n1,
//     where a2 runs as opportunistic: a2 is evicted, b2 waits for it.
//  5. a2's pod is gone: b2 binds n1.
func TestTenancyCellsConfigMapChange(t *testing.T) {
	after, err := os.ReadFile("../docs/reference/examples/cells-one-for-a.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, at := hivedWorld(t, "../docs/reference/examples/cells-two-for-a.yaml", 3, withCellsConfigMap)
	cfg := w.s.cfg
	step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
	for _, name := range []string{"a1", "a2"} {
		w.create(name, 4, vcAnn("A", ""), *at)
	}
	w.create("b1", 4, vcAnn("B", ""), *at)
	all := "ns/a1@n0[0,1,2,3] ns/a2@n1[0,1,2,3] ns/b1@n2[0,1,2,3]"
	step("before the change", all)
	w.setCells(cfg, string(after))
	step("the change", all)
	if got := w.log.String(); !strings.Contains(got, "kept pod ns/a1, pod ns/b1; lazily preempted pod ns/a2") {
		t.Fatalf("no record of the change in the log:\n%s", got)
	}
	w.setCells(cfg, strings.Replace(string(after), "cellNumber: 1}", "cellNumber: 3}", 1))
	step("an infeasible change", all)
	if got := w.log.String(); !strings.Contains(got, `configmap pal-system/pal-cells key cells.yaml:10: field \"virtualClusters.A.virtualCells[0]\": illegal initial VC assignment`) ||
		!strings.Contains(got, "the cells in force stay") {
		t.Fatalf("the refusal is not in the log:\n%s", got)
	}
	w.create("b2", 4, vcAnn("B", ""), *at)
	step("b2 arrives", all)
	if w.pods["ns/a2"].DeletionTimestamp == nil {
		t.Fatal("a2 was not evicted for b2")
	}
	w.remove("ns/a2")
	step("a2 gone", "ns/a1@n0[0,1,2,3] ns/b1@n2[0,1,2,3] ns/b2@n1[0,1,2,3]")
}

// The cells ConfigMap takes n1, where b1 runs, out of the cells and puts
// n2 in. b1 runs on outside the cells (the CellsApplied message says so)
// and B's one cell is free for b2, which binds n2. Before, the scheduler
// still counted b1 as the cells', so the stage placed it afresh, as if it
// waited, on B's cell over n2: b2 waited beside 4 free GPUs while b1
// ran.
func TestTenancyCellsDropARunningGangsNode(t *testing.T) {
	before, err := os.ReadFile("testdata/two-vcs.yaml")
	if err != nil {
		t.Fatal(err)
	}
	w, at := hivedWorld(t, "testdata/two-vcs.yaml", 3, withCellsConfigMap)
	cfg := w.s.cfg
	step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
	w.create("a1", 4, vcAnn("A", ""), *at)
	w.create("b1", 4, vcAnn("B", ""), *at)
	step("before the change", "ns/a1@n0[0,1,2,3] ns/b1@n1[0,1,2,3]")
	w.setCells(cfg, strings.Replace(string(before), "cellAddress: n1}", "cellAddress: n2}", 1))
	step("the change", "ns/a1@n0[0,1,2,3] ns/b1@n1[0,1,2,3]")
	if got := w.log.String(); !strings.Contains(got, "running on outside the cells pod ns/b1") {
		t.Errorf("the change does not say b1 runs on outside the cells:\n%s", got)
	}
	w.create("b2", 4, vcAnn("B", ""), *at)
	step("b2 arrives", "ns/a1@n0[0,1,2,3] ns/b1@n1[0,1,2,3] ns/b2@n2[0,1,2,3]")
}

// A gang the round may not evict (bare pods, preemptBarePods off) runs on
// VC A's one cell; under las, A's placer would preempt it for k, which
// has had no service. The cells keep g where it runs and out of A's
// placer's reach: k waits, A's quota full (B's node free beside it), and
// nothing is refused or taken in again. Before, the cells released g
// when the placer preempted it, the round refused the eviction, and
// every other round the cells took g back and preempted it again (on a
// kwok dev cluster a "move refused" and a "running gang taken into the
// cells" line every 4 s); left outside the cells, g would let k take
// A's cell on B's node.
func TestTenancyKeepsUnevictableGang(t *testing.T) {
	w, at := hivedWorld(t, "testdata/two-vcs.yaml", 2, lasPal)
	for _, p := range []string{"g-0", "g-1"} {
		w.createWith(p, 2, gangAnn("g", 2, AnnVC, "A", AnnModel, "BERT", AnnIterations, "100000"), *at, []metav1.OwnerReference{}) // bare
	}
	const g = "ns/g-0@n0[0,1] ns/g-1@n0[2,3]"
	for r := range 2 {
		if got := w.step(at, "g"); got != g {
			t.Fatalf("round %d: bound %s, want %s", r, got, g)
		}
	}
	w.create("k", 4, vcJob("A"), *at)
	for r := range 6 {
		if got := w.step(at, "k"); got != g {
			t.Fatalf("round %d after k: bound %s, want %s\n%s", r, got, g, w.log.String())
		}
	}
	if why := w.s.lastWhy["ns/pod:k"]; !strings.Contains(why, "waits at queue position 1") {
		t.Errorf("k waits with %q", why)
	}
	l := w.log.String()
	for _, bad := range []string{"move refused", "taken into the cells", "outside the cells"} {
		if n := strings.Count(l, bad); n > 0 {
			t.Errorf("%d log lines say %q:\n%s", n, bad, l)
		}
	}
}

// A restart finds A's 2-pod gang g with one pod finished and one still
// running on n0: the cells take it back too, so A's one cell stays held
// and k (A) waits instead of taking A's cell on B's node n1.
func TestTenancyRestartKeepsLeavingGangsCells(t *testing.T) {
	w, at := hivedWorld(t, "testdata/two-vcs.yaml", 2)
	for _, p := range []string{"g-0", "g-1"} {
		w.create(p, 2, gangAnn("g", 2, AnnVC, "A"), *at)
	}
	if got, want := w.step(at, "g"), "ns/g-0@n0[0,1] ns/g-1@n0[2,3]"; got != want {
		t.Fatalf("bound %s, want %s", got, want)
	}
	w.finish("ns/g-0")
	w.restart()
	w.create("k", 4, vcAnn("A", ""), *at)
	for r := range 3 {
		if got, want := w.step(at, "k"), "ns/g-1@n0[2,3]"; got != want {
			t.Fatalf("round %d after the restart: bound %s, want %s\n%s", r, got, want, w.log.String())
		}
	}
	w.finish("ns/g-1")
	if got := w.step(at, "g ends"); !strings.HasPrefix(got, "ns/k@") || strings.Contains(got, " ") {
		t.Fatalf("after g: bound %s, want k alone", got)
	}
}
