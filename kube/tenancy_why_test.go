package kube

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// whyWorld is two 4-GPU nodes under hived with testdata/two-vcs.yaml (VC
// A and B one node cell each) and n nodes in all (n2 on: outside the
// cells), every node labelled zone=<its name>.
func whyWorld(t *testing.T, n int) (*world, *time.Time) {
	return cellsWorld(t, "testdata/two-vcs.yaml", n)
}

// waitsOnce runs three more rounds with want bound and checks that the
// gang's wait message is want and was logged (an event sent) once.
func waitsOnce(t *testing.T, w *world, at *time.Time, bound, key, want string) {
	t.Helper()
	for range 3 {
		w.expect(at, "waiting", bound)
	}
	if got := w.s.lastWhy[key]; got != want {
		t.Fatalf("%s waits with\n%q, want\n%q", key, got, want)
	}
	if n := strings.Count(w.log.String(), want); n != 1 {
		t.Errorf("the wait message was logged %d times over four rounds, want once", n)
	}
}

// A's one cell is used: a2 (A) waits, B's node free beside it.
func TestTenancyWhyVCFull(t *testing.T) {
	w, at := whyWorld(t, 2)
	w.create("a1", 4, vcAnn("A", ""), *at)
	w.create("a2", 1, vcAnn("A", ""), *at)
	waitsOnce(t, w, at, "ns/a1@n0[0,1,2,3]", "ns/pod:a2",
		"gang of 1 pods (1 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; VC A's cells cannot hold it: 0 of their 4 GPUs free")
}

// A's gang selects zone n2, a node outside the cells.
func TestTenancyWhySelectorOutsideVC(t *testing.T) {
	w, at := whyWorld(t, 3)
	w.create("a", 2, vcAnn("A", ""), *at)
	w.mu.Lock()
	w.pods["ns/a"].Spec.NodeSelector = map[string]string{"zone": "n2"}
	w.mu.Unlock()
	waitsOnce(t, w, at, "", "ns/pod:a",
		"gang of 1 pods (2 GPUs) waits at queue position 1 under fifo/pal-ma: 12 GPUs free; its node selector or affinity allows no node of VC A's cells")
}

// cellsWorld is whyWorld on the cells file cells.
func cellsWorld(t *testing.T, cells string, n int) (*world, *time.Time) {
	w, at := hivedWorld(t, cells, n)
	for name, nd := range w.nodes {
		nd.Labels = map[string]string{"zone": name}
	}
	return w, at
}

// cordon marks a node unschedulable (on) or schedulable again.
func cordon(w *world, name string, on bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.nodes[name].DeepCopy()
	n.Spec.Unschedulable = on
	w.nodes[name] = n
	w.queue = append(w.queue, worldEvent{key: "node/" + name, node: n})
}

// createOn creates a pod whose node selector allows only the node named
// (by its zone label, as whyWorld's).
func createOn(w *world, at time.Time, name string, gpus int, ann map[string]string, node string) {
	w.create(name, gpus, ann, at)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods["ns/"+name].Spec.NodeSelector = map[string]string{"zone": node}
}

// createIn creates a pod whose required node affinity allows only the
// nodes named (by their zone labels, as whyWorld's).
func createIn(w *world, at time.Time, name string, gpus int, ann map[string]string, nodes ...string) {
	w.create(name, gpus, ann, at)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods["ns/"+name].Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "zone", Operator: corev1.NodeSelectorOpIn, Values: nodes}},
		}}},
	}}
}

// The reasons that read which of the cells a waiting gang's VC may use:
// its candidate nodes are those of its VC's cell types bound to its VC
// or to none (an unbound cell may bind any VC's virtual cell), never one
// bound to another VC; its VC's cells hold it only if their free GPUs
// hold its pods whole, node by node.
func TestTenancyWhyCells(t *testing.T) {
	three := cellsFile(t, nodeCells(3, 1, 1)) // n0-n2, A and B one node cell each
	twoA := cellsFile(t, nodeCells(2, 2))     // n0-n1, A two node cells
	const two = "testdata/two-vcs.yaml"
	for _, c := range []struct {
		name  string
		cells string
		nodes int
		// before runs the rounds before the gang waits, returning what
		// stays bound.
		before    func(w *world, at *time.Time) string
		key, want string
	}{{
		// b (B) binds n0 and n1 is cordoned: A's cell is bound to n1
		// (HiveD's doomed cell: no healthy cell is left for it), whose
		// GPUs a (A) may not use.
		name: "VC's cell on a failed node", cells: two, nodes: 2,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			w.expect(at, "b", "ns/b@n0[0,1,2,3]")
			cordon(w, "n1", true)
			w.create("a", 4, vcAnn("A", ""), *at)
			return "ns/b@n0[0,1,2,3]"
		},
		key:  "ns/pod:a",
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free; VC A's cells cannot hold it: 0 of their 4 GPUs free, 4 on nodes cordoned or not ready (n1)",
	}, {
		// b (B, 1 GPU) binds n0, whose 3 free GPUs are B's; n1 is
		// cordoned: a (A, 2 GPUs) has no GPU, though 3 are free.
		name: "other VC's free GPUs not counted", cells: two, nodes: 2,
		before: func(w *world, at *time.Time) string {
			w.create("b", 1, vcAnn("B", ""), *at)
			w.expect(at, "b", "ns/b@n0[0]")
			cordon(w, "n1", true)
			w.create("a", 2, vcAnn("A", ""), *at)
			return "ns/b@n0[0]"
		},
		key:  "ns/pod:a",
		want: "gang of 1 pods (2 GPUs) waits at queue position 2 under fifo/pal-ma: 3 GPUs free; VC A's cells cannot hold it: 0 of their 4 GPUs free, 4 on nodes cordoned or not ready (n1)",
	}, {
		// b (B) binds n0; n1 is cordoned, n2 up, so A's cell stays
		// unbound (healthy n2 can take it). a (A) may run only on n0 or
		// n1: its candidates are n1 (unbound, open to A), not n0 (B's).
		name: "other VC's node no candidate, unbound node one", cells: three, nodes: 3,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			w.expect(at, "b", "ns/b@n0[0,1,2,3]")
			cordon(w, "n1", true)
			createIn(w, *at, "a", 4, vcAnn("A", ""), "n0", "n1")
			return "ns/b@n0[0,1,2,3]"
		},
		key:  "ns/pod:a",
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; 1 of its 1 candidate nodes cordoned or not ready (n1)",
	}, {
		// n0's GPU 0 is quarantined and n1 cordoned; A's cell is unbound
		// (n2 can take it). a (A) may run only on n0 or n1: n0's 4 free
		// GPUs are 3 a guaranteed gang may use.
		name: "quarantined GPU no candidate's", cells: three, nodes: 3,
		before: func(w *world, at *time.Time) string {
			if err := w.s.ten.hived.Cells().Quarantine("n0", 0, true); err != nil {
				w.t.Fatal(err)
			}
			cordon(w, "n1", true)
			createIn(w, *at, "a", 4, vcAnn("A", ""), "n0", "n1")
			return ""
		},
		key:  "ns/pod:a",
		want: "gang of 1 pods (4 GPUs) waits at queue position 1 under fifo/pal-ma: 8 GPUs free; 1 of its 2 candidate nodes cordoned or not ready (n1)",
	}, {
		// x0 and x1 (A, 2 GPUs) hold half of n0 and of n1, and n1 is
		// cordoned: of A's 4 GPUs no gang holds, only n0's 2 are free.
		name: "failed node's GPUs not free", cells: twoA, nodes: 2,
		before: func(w *world, at *time.Time) string {
			createOn(w, *at, "x0", 2, vcAnn("A", ""), "n0")
			createOn(w, *at, "x1", 2, vcAnn("A", ""), "n1")
			w.expect(at, "x0 and x1", "ns/x0@n0[0,1] ns/x1@n1[0,1]")
			cordon(w, "n1", true)
			w.create("g", 4, vcAnn("A", ""), *at)
			return "ns/x0@n0[0,1] ns/x1@n1[0,1]"
		},
		key:  "ns/pod:g",
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 2 GPUs free; VC A's cells cannot hold it: 2 of their 8 GPUs free, 2 on nodes cordoned or not ready (n1)",
	}, {
		// b (B) binds n0; x (A, 2 GPUs) holds half of n1, which is then
		// cordoned: A's cell there has 2 GPUs no gang holds, those g (A)
		// could use were n1 back (TestTenancyWhyOpportunistic counts the
		// same 2 for an opportunistic gang).
		name: "cordoned node's held GPUs not counted", cells: two, nodes: 2,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			createOn(w, *at, "x", 2, vcAnn("A", ""), "n1")
			w.expect(at, "b and x", "ns/b@n0[0,1,2,3] ns/x@n1[0,1]")
			cordon(w, "n1", true)
			w.create("g", 4, vcAnn("A", ""), *at)
			return "ns/b@n0[0,1,2,3] ns/x@n1[0,1]"
		},
		key:  "ns/pod:g",
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free; VC A's cells cannot hold it: 0 of their 4 GPUs free, 2 on nodes cordoned or not ready (n1)",
	}, {
		// b (B) binds n0; x (A, 1 GPU) binds A's cell to n1, where
		// another scheduler's pod holds 2 GPUs by count (it names
		// none); n1 is then cordoned: of A's 3 GPUs there no gang
		// holds, g (A) could use 1 were n1 back, as the round would
		// see the other pod's 2 taken.
		name: "cordoned node's foreign pods not counted", cells: two, nodes: 2,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			createOn(w, *at, "x", 1, vcAnn("A", ""), "n1")
			w.expect(at, "b and x", "ns/b@n0[0,1,2,3] ns/x@n1[0]")
			f := running(pod("f", 2, nil, "n1"))
			f.Spec.SchedulerName = "default-scheduler"
			w.s.state.OnBoundPod(f)
			cordon(w, "n1", true)
			w.create("g", 2, vcAnn("A", ""), *at)
			return "ns/b@n0[0,1,2,3] ns/x@n1[0]"
		},
		key:  "ns/pod:g",
		want: "gang of 1 pods (2 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free; VC A's cells cannot hold it: 0 of their 4 GPUs free, 1 on nodes cordoned or not ready (n1)",
	}, {
		// n0's GPU 0 is quarantined; a (A) binds healthy n1, so B's cell
		// is bound to n0 (doomed): b (B, 4 GPUs) sees 4 GPUs free on n0,
		// of which B may use 3.
		name: "quarantined GPU not free", cells: two, nodes: 2,
		before: func(w *world, at *time.Time) string {
			if err := w.s.ten.hived.Cells().Quarantine("n0", 0, true); err != nil {
				w.t.Fatal(err)
			}
			w.create("a", 4, vcAnn("A", ""), *at)
			w.expect(at, "a", "ns/a@n1[0,1,2,3]")
			w.create("b", 4, vcAnn("B", ""), *at)
			return "ns/a@n1[0,1,2,3]"
		},
		key:  "ns/pod:b",
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; VC B's cells cannot hold it: 3 of their 4 GPUs free, 1 quarantined",
	}, {
		// x0 and x1 (A, 2 GPUs) hold half of n0 and of n1: 4 of A's GPUs
		// are free, but no node has 4 for g's pod.
		name: "no node with room for a pod", cells: twoA, nodes: 2,
		before: func(w *world, at *time.Time) string {
			createOn(w, *at, "x0", 2, vcAnn("A", ""), "n0")
			createOn(w, *at, "x1", 2, vcAnn("A", ""), "n1")
			w.expect(at, "x0 and x1", "ns/x0@n0[0,1] ns/x1@n1[0,1]")
			w.create("g", 4, vcAnn("A", ""), *at)
			return "ns/x0@n0[0,1] ns/x1@n1[0,1]"
		},
		key:  "ns/pod:g",
		want: "gang of 1 pods (4 GPUs) waits at queue position 3 under fifo/pal-ma: 4 GPUs free; VC A's cells cannot hold it: 4 of their 8 GPUs free, but no node of them has 4 free for a pod",
	}, {
		// x1 (A, 2 GPUs) holds half of n1: 6 of A's GPUs are free, but
		// only n0 has room for a pod of g's (2 pods of 3 GPUs).
		name: "room for some pods", cells: twoA, nodes: 2,
		before: func(w *world, at *time.Time) string {
			createOn(w, *at, "x1", 2, vcAnn("A", ""), "n1")
			w.expect(at, "x1", "ns/x1@n1[0,1]")
			w.create("g-0", 3, gangAnn("g", 2, AnnVC, "A"), *at)
			w.create("g-1", 3, gangAnn("g", 2, AnnVC, "A"), *at)
			return "ns/x1@n1[0,1]"
		},
		key:  "ns/g",
		want: "gang of 2 pods (6 GPUs) waits at queue position 2 under fifo/pal-ma: 6 GPUs free; VC A's cells cannot hold it: 6 of their 8 GPUs free, but their nodes have room for 1 of its 2 pods of 3 GPUs",
	}} {
		t.Run(c.name, func(t *testing.T) {
			w, at := cellsWorld(t, c.cells, c.nodes)
			waitsOnce(t, w, at, c.before(w, at), c.key, c.want)
		})
	}
}

// A's cell is held by g, whose pods are bare (never evicted with
// preemptBarePods off); k (A) would preempt it under las.
func TestTenancyWhyVictimNotEvictable(t *testing.T) {
	w, at := hivedWorld(t, "testdata/two-vcs.yaml", 2, lasPal)
	w.createWith("g", 4, vcJob("A"), *at, []metav1.OwnerReference{}) // bare
	w.expect(at, "g", "ns/g@n0[0,1,2,3]")
	w.create("k", 4, vcJob("A"), *at)
	waitsOnce(t, w, at, "ns/g@n0[0,1,2,3]", "ns/pod:k",
		"gang of 1 pods (4 GPUs) waits at queue position 1 under las/pal: 4 GPUs free; VC A's cells cannot hold it: 0 of their 4 GPUs free, pod ns/g on them may not be evicted (preemptBarePods off)")
}

// An opportunistic gang o of A with bare pods runs on n1; b (B,
// guaranteed) needs B's cell there: the cells preempt o, which the round
// may not evict.
func TestTenancyWhyOpportunisticVictimNotEvictable(t *testing.T) {
	w, at := whyWorld(t, 2)
	bAfterBareO(w, at)
	waitsOnce(t, w, at, "ns/a@n0[0,1,2,3] ns/o@n1[0,1,2,3]", "ns/pod:b",
		"gang of 1 pods (4 GPUs) waits at queue position 3 under fifo/pal-ma: 0 GPUs free; it needs the cells of pod ns/o, whose pods may not be evicted (preemptBarePods off)")
}

// Under quota A's 4 GPUs are in use: a2 (A) waits, B's node free.
func TestTenancyWhyQuotaUsed(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "quota", "testdata/two-vcs.yaml"
	w := newWorld(t, cfg, 1, 2, 4)
	at := time.Unix(1_700_000_000, 0)
	w.create("a1", 4, vcAnn("A", ""), at)
	w.create("a2", 1, vcAnn("A", ""), at)
	waitsOnce(t, w, &at, "ns/a1@n0[0,1,2,3]", "ns/pod:a2",
		"gang of 1 pods (1 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; VC A's quota is used: 4 of its 4 GPUs")
}

// xyCells is n0 of leaf type X, VC A's, and n1 of leaf type Y, VC B's.
const xyCells = `physicalCluster:
  cellTypes:
    XNODE: {childCellType: X, childCellNumber: 4, isNodeLevel: true}
    YNODE: {childCellType: Y, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: XNODE, cellAddress: n0}
  - {cellType: YNODE, cellAddress: n1}
virtualClusters:
  A: {virtualCells: [{cellType: XNODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: YNODE, cellNumber: 1}]}
`

// An opportunistic gang's reasons read the GPUs HiveD may give it: any
// chain of its leaf type across the cluster, bound to a VC or not, not
// its VC's pools.
func TestTenancyWhyOpportunistic(t *testing.T) {
	xy := cellsFile(t, xyCells)
	const two = "testdata/two-vcs.yaml"
	opp := func(extra ...string) map[string]string {
		a := vcAnn("A", "-1")
		for i := 0; i+1 < len(extra); i += 2 {
			a[extra[i]] = extra[i+1]
		}
		return a
	}
	for _, c := range []struct {
		name   string
		cells  string
		before func(w *world, at *time.Time) string
		want   string
	}{{
		// a (A) holds n0, A's X node; n1 (Y, B's) is cordoned: o (A)
		// could run on either leaf type.
		name: "another leaf type's failed node", cells: xy,
		before: func(w *world, at *time.Time) string {
			w.create("a", 4, vcAnn("A", ""), *at)
			w.expect(at, "a", "ns/a@n0[0,1,2,3]")
			cordon(w, "n1", true)
			w.create("o", 4, opp(), *at)
			return "ns/a@n0[0,1,2,3]"
		},
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free; the cells cannot hold it: 0 of their 8 GPUs free, 4 on nodes cordoned or not ready (n1)",
	}, {
		// b (B) binds n0; x (A, 2 GPUs) holds half of n1, which is then
		// cordoned: of n1's GPUs o (A) could use were it back, 2 (those
		// no gang holds), as a guaranteed gang of A counts
		// (TestTenancyWhyCells).
		name: "cordoned node's held GPUs not counted", cells: two,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			createOn(w, *at, "x", 2, vcAnn("A", ""), "n1")
			w.expect(at, "b and x", "ns/b@n0[0,1,2,3] ns/x@n1[0,1]")
			cordon(w, "n1", true)
			w.create("o", 4, opp(), *at)
			return "ns/b@n0[0,1,2,3] ns/x@n1[0,1]"
		},
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free; the cells cannot hold it: 0 of their 8 GPUs free, 2 on nodes cordoned or not ready (n1)",
	}, {
		// b (B) binds n0; another scheduler's pods hold n1's GPUs 0
		// and 1, no gang of the cells: once n1 is cordoned, o (A)
		// could use only its GPUs 2 and 3 were it back, as it could
		// while n1 was up.
		name: "cordoned node's foreign pods not counted", cells: two,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			w.expect(at, "b", "ns/b@n0[0,1,2,3]")
			foreignOn(w, "f0", "n1", 0)
			foreignOn(w, "f1", "n1", 1)
			cordon(w, "n1", true)
			w.create("o", 4, opp(), *at)
			return "ns/b@n0[0,1,2,3]"
		},
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free; the cells cannot hold it: 0 of their 8 GPUs free, 2 on nodes cordoned or not ready (n1)",
	}, {
		// o (A) names leaf type Y, of which A has no cells; b (B) holds
		// half of n1.
		name: "a leaf type its VC lacks", cells: xy,
		before: func(w *world, at *time.Time) string {
			w.create("b", 2, vcAnn("B", ""), *at)
			w.expect(at, "b", "ns/b@n1[0,1]")
			w.create("o", 4, opp(AnnLeafCellType, "Y"), *at)
			return "ns/b@n1[0,1]"
		},
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 6 GPUs free; the cells of leaf type Y cannot hold it: 2 of their 4 GPUs free",
	}, {
		// a (A) and b (B) hold half of each node: 4 GPUs are free, 2 on
		// each, and o's pod needs 4 on one node.
		name: "pods whole across the cluster", cells: two,
		before: func(w *world, at *time.Time) string {
			w.create("a", 2, vcAnn("A", ""), *at)
			w.create("b", 2, vcAnn("B", ""), *at)
			w.expect(at, "a and b", "ns/a@n0[0,1] ns/b@n1[0,1]")
			w.create("o", 4, opp(), *at)
			return "ns/a@n0[0,1] ns/b@n1[0,1]"
		},
		want: "gang of 1 pods (4 GPUs) waits at queue position 3 under fifo/pal-ma: 4 GPUs free; the cells cannot hold it: 4 of their 8 GPUs free, but no node of them has 4 free for a pod",
	}, {
		// b (B, asking first) binds n0; o (A) may run only on n0, B's
		// node: it waits for n0's GPUs, which HiveD may give it.
		name: "selector on another VC's node", cells: two,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			w.expect(at, "b", "ns/b@n0[0,1,2,3]")
			createOn(w, *at, "o", 4, opp(), "n0")
			return "ns/b@n0[0,1,2,3]"
		},
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; the cells on the nodes its node selector or affinity allows cannot hold it: 0 of their 4 GPUs free",
	}, {
		// b (B) binds n0; n1, free, carries a taint o (A) does not
		// tolerate: the GPUs counted are those of the nodes it may use,
		// and the reason says so (a kwok trial read "0 of their 16 GPUs
		// free" beside 8 free on tainted nodes).
		name: "a taint it does not tolerate", cells: two,
		before: func(w *world, at *time.Time) string {
			w.create("b", 4, vcAnn("B", ""), *at)
			w.expect(at, "b", "ns/b@n0[0,1,2,3]")
			taint(w, "n1", corev1.Taint{Key: "dedicated", Value: "ml", Effect: corev1.TaintEffectNoSchedule})
			w.create("o", 4, opp(), *at)
			return "ns/b@n0[0,1,2,3]"
		},
		want: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 4 GPUs free; the cells on the nodes its node selector, affinity and tolerations allow cannot hold it: 0 of their 4 GPUs free",
	}} {
		t.Run(c.name, func(t *testing.T) {
			w, at := cellsWorld(t, c.cells, 2)
			waitsOnce(t, w, at, c.before(w, at), "ns/pod:o", c.want)
		})
	}
}
