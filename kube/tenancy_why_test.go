package kube

import (
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// whyWorld is two 4-GPU nodes under hived with testdata/two-vcs.yaml (VC
// A and B one node cell each) and n nodes in all (n2 on: outside the
// cells), every node labelled zone=<its name>.
func whyWorld(t *testing.T, n int) (*world, *time.Time) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	w := newWorld(t, cfg, 1, n, 4)
	for name, nd := range w.nodes {
		nd.Labels = map[string]string{"zone": name}
	}
	at := time.Unix(1_700_000_000, 0)
	return w, &at
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

// b (B) binds n1 and n0 is cordoned: a (A) could bind only n0 or n1.
func TestTenancyWhyCordoned(t *testing.T) {
	w, at := whyWorld(t, 2)
	w.create("b", 4, vcAnn("B", ""), *at)
	w.expect(at, "b", "ns/b@n0[0,1,2,3]")
	w.mu.Lock()
	n := w.nodes["n1"].DeepCopy()
	n.Spec.Unschedulable = true
	w.nodes["n1"] = n
	w.queue = append(w.queue, worldEvent{key: "node/n1", node: n})
	w.mu.Unlock()
	w.create("a", 4, vcAnn("A", ""), *at)
	waitsOnce(t, w, at, "ns/b@n0[0,1,2,3]", "ns/pod:a",
		"gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal-ma: 0 GPUs free; 1 of its 2 candidate nodes cordoned or not ready (n1)")
}

// A's cell is held by g, whose pods are bare (never evicted with
// preemptBarePods off); k (A) would preempt it under las.
func TestTenancyWhyVictimNotEvictable(t *testing.T) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Scheduler, cfg.Placement = "las", "pal"
	cfg.Tenancy, cfg.Cells = "hived", "testdata/two-vcs.yaml"
	w := newWorld(t, cfg, 1, 2, 4)
	at := time.Unix(1_700_000_000, 0)
	work := func(a map[string]string) map[string]string {
		a[AnnModel], a[AnnIterations] = "BERT", "100000"
		return a
	}
	w.createWith("g", 4, work(vcAnn("A", "")), at, []metav1.OwnerReference{}) // bare
	w.expect(&at, "g", "ns/g@n0[0,1,2,3]")
	w.create("k", 4, work(vcAnn("A", "")), at)
	waitsOnce(t, w, &at, "ns/g@n0[0,1,2,3]", "ns/pod:k",
		"gang of 1 pods (4 GPUs) waits at queue position 1 under las/pal: 4 GPUs free; VC A's cells cannot hold it: 0 of their 4 GPUs free, pod ns/g on them may not be evicted (preemptBarePods off)")
}

// An opportunistic gang o of A with bare pods runs on n1; b (B,
// guaranteed) needs B's cell there: the cells preempt o, which the round
// may not evict.
func TestTenancyWhyOpportunisticVictimNotEvictable(t *testing.T) {
	w, at := whyWorld(t, 2)
	w.create("a", 4, vcAnn("A", ""), *at)
	w.createWith("o", 4, vcAnn("A", "-1"), *at, []metav1.OwnerReference{}) // bare
	w.expect(at, "a and o", "ns/a@n0[0,1,2,3] ns/o@n1[0,1,2,3]")
	w.create("b", 4, vcAnn("B", ""), *at)
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
