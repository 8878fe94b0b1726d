package tenant

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// twoNodes is 2 nodes x 4 GPUs, VCs A and B of one node cell each.
const twoNodes = `
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`

const oneNode = `
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
virtualClusters:
  V: {virtualCells: [{cellType: NODE, cellNumber: 1}]}
`

func layoutOf(t *testing.T, yml string) *Layout {
	t.Helper()
	cfg, err := tenancy.Parse("cells.yaml", []byte(yml))
	if err != nil {
		t.Fatal(err)
	}
	l, err := NewLayout(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// job is one trace row: rounds of 60 s of work on gpus GPUs.
func job(id int, vc string, prio, gpus, pod int, submit, rounds float64) workload.Spec {
	return workload.Spec{ID: id, GPUs: gpus, PodGPUs: pod, Submit: submit, Iterations: 60 * rounds, IterTime: 1,
		Model: workload.NoModel, Tracked: true, VC: vc, VCPriority: prio, Source: "t.csv", Line: id + 2}
}

// runStage runs a trace under a stage with sched inside each VC (PerVC)
// and placer (a fresh instance per VC, pods kept whole); rounds of 60 s.
func runStage(t *testing.T, l *Layout, mode string, tr *workload.Trace, sched string, placer string, perVC bool) map[int]metrics.JobRecord {
	t.Helper()
	mkPlacer := func() (policy.Placer, error) {
		p, err := place.New(placer)
		return place.PodGuard{Placer: p}, err
	}
	iv := &IntraVC{NewPlacer: mkPlacer}
	var stage policy.Tenancy
	switch mode {
	case "quota":
		q := NewQuota(l)
		q.SetIntraVC(iv)
		stage = q
	case "hived":
		h, err := NewHiveD(l)
		if err != nil {
			t.Fatal(err)
		}
		h.SetIntraVC(iv)
		stage = h
	}
	var s policy.Scheduler
	var err error
	if perVC {
		s, err = NewPerVC(l, func() (policy.Scheduler, error) { return schedule.New(sched) })
	} else {
		s, err = schedule.New(sched)
	}
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := mkPlacer()
	res, err := sim.Run(sim.Config{Cluster: l.Cluster, Trace: tr, Scheduler: s, Placer: pl, Tenancy: stage,
		CheckInvariants: true, Round: 60, Locality: sim.ConstantLocality(1)})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]metrics.JobRecord{}
	for _, r := range res.Jobs {
		out[r.ID] = r
	}
	return out
}

// Item: an equal-priority job is never preempted, through the whole stage.
// One 4-GPU node, FIFO + packed-sticky inside the VC, rounds of 60 s.
// t = 0: E (priority 1, 1 GPU) and L (priority 0, 1 GPU) arrive; the VC's
// order is priority first, so E, L: E gets GPU 0, L GPU 1. t = 60: R
// (priority 1, 3 GPUs) arrives; order E, R, L. R does not fit (2 free), so
// the frame suspends from the tail: L; then R fits on GPUs 1, 2, 3. E is
// ahead of R and keeps GPU 0. So R starts at 60 on [1 2 3], L has one
// preemption, E none.
func TestStageEqualPriorityNeverPreempted(t *testing.T) {
	l := layoutOf(t, oneNode)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "V", 1, 1, 0, 0, 100), // E
		job(1, "V", 0, 1, 0, 0, 100), // L
		job(2, "V", 1, 3, 0, 60, 10), // R
	}}
	recs := runStage(t, l, "hived", tr, "fifo", "packed-sticky", true)
	e, lo, r := recs[0], recs[1], recs[2]
	if r.FirstStart != 60 || fmt.Sprint(r.GPUIDs) != "[1 2 3]" {
		t.Errorf("R started at %g on %v, want 60 on [1 2 3]", r.FirstStart, r.GPUIDs)
	}
	if e.Preemptions != 0 || lo.Preemptions != 1 {
		t.Errorf("preemptions E %d, L %d; want 0 and 1", e.Preemptions, lo.Preemptions)
	}
}

// Item: an opportunistic job that does not fit does not block its VC's
// guaranteed jobs. 2 nodes x 4, VCs A and B one node each, FIFO, all at
// t = 0 in this order: B guaranteed 4 GPUs, A opportunistic 2 pods of 4,
// A guaranteed 4 GPUs. B's job takes one node; A's guaranteed job goes to
// A's view (its node is free), so it starts at 0; the opportunistic one
// needs both nodes and waits. Under quota the same: A is under quota and
// a node is free. The scheduler is plain FIFO (arrival order across VCs,
// the opportunistic job before A's guaranteed one) and PerVC alike.
func TestOpportunisticNeverBlocksGuaranteed(t *testing.T) {
	l := layoutOf(t, twoNodes)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "B", 0, 4, 4, 0, 10),
		job(1, "A", tenancy.Opportunistic, 8, 4, 0, 10),
		job(2, "A", 0, 4, 4, 0, 10),
	}}
	for _, mode := range []string{"hived", "quota"} {
		for _, perVC := range []bool{false, true} {
			recs := runStage(t, l, mode, tr, "fifo", "packed-sticky", perVC)
			if recs[2].FirstStart != 0 || recs[0].FirstStart != 0 {
				t.Errorf("%s (per-VC order %v): A's guaranteed job starts at %g, B's at %g; want both 0", mode, perVC, recs[2].FirstStart, recs[0].FirstStart)
			}
		}
	}
}

// Quota blocks a VC only on its own: 2 nodes x 4, quota 4 each, spread
// placement (YARN-CS), FIFO. t = 0: B's two 1-GPU jobs land one per node
// (most free GPUs, ties to the lower node). t = 60: A's 4-GPU job (one pod)
// fits A's quota but no node has 4 free: A blocks. t = 120: B's third
// 1-GPU job fits B's quota (2 of 4 used) and a free GPU: it starts at 120,
// behind A's blocked job in arrival order. One frame for every VC would
// stop at A's job and hold B's back.
func TestQuotaBlocksOnlyItsVC(t *testing.T) {
	l := layoutOf(t, twoNodes)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "B", 0, 1, 0, 0, 100),
		job(1, "B", 0, 1, 0, 0, 100),
		job(2, "A", 0, 4, 4, 60, 10),
		job(3, "B", 0, 1, 0, 120, 10),
	}}
	recs := runStage(t, l, "quota", tr, "fifo", "spread", true)
	if recs[3].FirstStart != 120 {
		t.Errorf("B's third job starts at %g, want 120", recs[3].FirstStart)
	}
	if recs[2].FirstStart != 6000 {
		// B's first two jobs run 100 rounds from 0: a node frees at 6000.
		t.Errorf("A's job starts at %g, want 6000", recs[2].FirstStart)
	}
}

// Quota lets a VC's scheduler preempt its own jobs within its quota, and
// never another VC's. 2 nodes x 4, quota 4 each, SRTF, packed-sticky.
// t = 0: A's a1 (4 GPUs, 100 rounds) starts; B's b1 (1 GPU, 200 rounds)
// starts. t = 60: A's a2 (4 GPUs, 10 rounds) arrives; SRTF ranks it first
// (600 s left against a1's 5,940 s): A admits a2 and a1 no longer fits the
// quota, so a1 is suspended. a2 runs [60, 660); a1 resumes at 660 with
// 5,940 s left and completes at 6,600. b1 is never preempted.
func TestQuotaPreemptsInsideItsVC(t *testing.T) {
	l := layoutOf(t, twoNodes)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "A", 0, 4, 0, 0, 100),
		job(1, "B", 0, 1, 0, 0, 200),
		job(2, "A", 0, 4, 0, 60, 10),
	}}
	recs := runStage(t, l, "quota", tr, "srtf", "packed-sticky", true)
	a1, b1, a2 := recs[0], recs[1], recs[2]
	if a2.FirstStart != 60 || a2.Completion != 660 {
		t.Errorf("a2 ran [%g, %g), want [60, 660)", a2.FirstStart, a2.Completion)
	}
	if a1.Preemptions != 1 || a1.Completion != 6600 {
		t.Errorf("a1: %d preemptions, done at %g; want 1 and 6600", a1.Preemptions, a1.Completion)
	}
	if b1.Preemptions != 0 {
		t.Errorf("b1 preempted %d times, want never", b1.Preemptions)
	}
}

// HiveD's promise, as a property: with guaranteed jobs only and healthy
// hardware, every job starts, stops and finishes under HiveD exactly when
// it does on its VC's private cluster, for every intra-VC scheduler and
// placer (the same scheduler and placer run in both). The cells are the
// mixed-level ones of tenant_test.go (a rack and pairs, nodes, single
// GPUs); 12 seeds of 40 jobs with priorities 0..2.
func TestHiveDEqualsPrivate(t *testing.T) {
	l := layout(t)
	for seed := uint64(0); seed < 12; seed++ {
		tr := randomTrace(rand.New(rand.NewPCG(seed, 7)), 40)
		// Traces arrive in submit order (the readers sort them).
		slices.SortStableFunc(tr.Jobs, func(a, b workload.Spec) int { return cmp.Compare(a.Submit, b.Submit) })
		for i := range tr.Jobs {
			if tr.Jobs[i].VCPriority == tenancy.Opportunistic {
				tr.Jobs[i].VCPriority = 0
			}
		}
		for _, sched := range []string{"fifo", "tiresias-las", "srtf"} {
			for _, placer := range []string{"spread", "packed-sticky", "packed-nonsticky", "random-sticky"} {
				shared := runStage(t, l, "hived", tr, sched, placer, true)
				samePrivate(t, l, tr, sched, placer, shared, "none", fmt.Sprintf("seed %d", seed))
			}
		}
	}
}

// samePrivate runs each VC's jobs of tr alone on its private cluster under
// mode ("none": no stage; "hived": the VC alone through the stage) with
// the same scheduler and placer, and fails unless every job starts, ends,
// and is preempted and migrated exactly as in shared.
func samePrivate(t *testing.T, l *Layout, tr *workload.Trace, sched, placer string, shared map[int]metrics.JobRecord, mode, label string) {
	t.Helper()
	probe, err := tenancy.New(l.Cells)
	if err != nil {
		t.Fatal(err)
	}
	for _, vc := range l.VCs() {
		sub := &workload.Trace{Name: tr.Name}
		for _, j := range tr.Jobs {
			if j.VC == vc {
				sub.Jobs = append(sub.Jobs, j)
			}
		}
		if len(sub.Jobs) == 0 {
			continue
		}
		pcfg, err := probe.PrivateConfig(vc)
		if err != nil {
			t.Fatal(err)
		}
		pl, err := NewLayout(pcfg)
		if err != nil {
			t.Fatal(err)
		}
		priv := runStage(t, pl, mode, sub, sched, placer, true)
		for _, j := range sub.Jobs {
			a, b := shared[j.ID], priv[j.ID]
			if a.FirstStart != b.FirstStart || a.Completion != b.Completion || a.Preemptions != b.Preemptions || a.Migrations != b.Migrations {
				t.Fatalf("%s, %s + %s, VC %s, job %d: hived start %g end %g preempt %d migrate %d; private %g %g %d %d",
					label, sched, placer, vc, j.ID, a.FirstStart, a.Completion, a.Preemptions, a.Migrations,
					b.FirstStart, b.Completion, b.Preemptions, b.Migrations)
			}
		}
	}
}

// Quota admits a VC's jobs in its order while they fit, and the first that
// does not ends the VC's round: no smaller job behind it slips in. VC A
// (quota 4), FIFO: a0 (3 GPUs) starts at 0; a1 (2) does not fit beside
// it, so a2 (1), which would, waits too; both start when a0 ends at 600.
func TestQuotaNoBackfillInsideAVC(t *testing.T) {
	l := layoutOf(t, twoNodes)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "A", 0, 3, 0, 0, 10),
		job(1, "A", 0, 2, 0, 0, 10),
		job(2, "A", 0, 1, 0, 0, 10),
	}}
	recs := runStage(t, l, "quota", tr, "fifo", "packed-sticky", true)
	for id, want := range []float64{0, 600, 600} {
		if got := recs[id].FirstStart; got != want {
			t.Errorf("a%d starts at %g, want %g", id, got, want)
		}
	}
}

// GPUs the driver hides (held outside the order, as pal-kube's quota
// hides GPUs of pods it does not schedule) are given to no job, guaranteed
// or opportunistic: on 2x4 with n0 hidden, A's 2-GPU job lands on n1, and
// an opportunistic job of 3 waits, though n0 looks free.
func TestQuotaHiddenGPUsGivenToNoOne(t *testing.T) {
	q, p, env := quotaOnTwoNodes(t, "packed-sticky")
	q.Hide = func(g int) bool { return g < 4 }
	order := []*workload.Job{workload.NewJob(job(0, "A", 0, 2, 0, 0, 10)), workload.NewJob(job(1, "B", tenancy.Opportunistic, 3, 0, 0, 10))}
	out := q.Place(env, order, p)
	if len(out[0]) != 2 || slices.ContainsFunc(out[0], q.Hide) || out[1] != nil {
		t.Errorf("A's job got %v, the opportunistic job %v; want two GPUs of n1 (4-7) and none", out[0], out[1])
	}
}

// Quota places the VCs least used relative to their quota first, and the
// order matters where fragmentation makes two VCs want the same node.
// 2 nodes x 4, quota 4 each, spread (sticky), FIFO. t = 0: both VCs hold
// nothing, so A goes first (config order): a0 (one pod of 2) lands on n0
// [0 1]; then B's b0 (1 GPU) on the node with the most GPUs free to B,
// n1 [4]. t = 60: a1 (A, 1 GPU) and b1 (B, one pod of 3) arrive. B holds
// 1/4 against A's 2/4, so B goes first: b1 takes n1's three free GPUs
// [5 6 7], and a1 lands on n0 [2]; both start at 60. With A first, a1
// would take n1 (3 free against n0's 2), and b1 would find no node with 3
// free until a1 ends at 660.
func TestQuotaLeastUsedVCFirst(t *testing.T) {
	l := layoutOf(t, twoNodes)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "A", 0, 2, 2, 0, 100),
		job(1, "B", 0, 1, 0, 0, 100),
		job(2, "A", 0, 1, 0, 60, 10),
		job(3, "B", 0, 3, 3, 60, 10),
	}}
	recs := runStage(t, l, "quota", tr, "fifo", "spread", true)
	for id, want := range map[int]string{0: "0 [0 1]", 1: "0 [4]", 2: "60 [2]", 3: "60 [5 6 7]"} {
		if got := fmt.Sprint(recs[id].FirstStart, " ", recs[id].GPUIDs); got != want {
			t.Errorf("job %d started at and on %s, want %s", id, got, want)
		}
	}
}

// A non-sticky VC placer's move is undone when it makes room for no other
// job of the VC (stay), even when the new GPUs overlap the job's own old
// ones. 2 nodes x 4, B's b0 runs on GPU 0, A's a0 on [2 3], A's a1 (2
// GPUs) waits; packed-nonsticky. B holds 1/4, A 2/4: B first, and keeps
// b0 (nothing of B waits). A re-plans on the GPUs B does not hold, n0 [1
// 2 3] and n1 [4..7]: a0 goes to the node with the fewest free GPUs that
// holds 2, n0, on [1 2]; a1 then finds 1 free on n0 and takes n1 [4 5].
// a0's move frees GPU 3 for no one and its old GPU 2 is taken only by a0
// itself, so a0 stays on [2 3].
func TestQuotaStayDespiteOwnOverlap(t *testing.T) {
	q, p, env := quotaOnTwoNodes(t, "packed-nonsticky")
	b0, a0, a1 := workload.NewJob(job(0, "B", 0, 1, 0, 0, 10)), workload.NewJob(job(1, "A", 0, 2, 0, 0, 10)), workload.NewJob(job(2, "A", 0, 2, 0, 0, 10))
	b0.GPUsHeld, a0.GPUsHeld = []int{0}, []int{2, 3}
	out := q.Place(env, []*workload.Job{b0, a0, a1}, p)
	if got := fmt.Sprint(out); got != "[[0] [2 3] [4 5]]" {
		t.Errorf("b0, a0, a1 got %s, want [[0] [2 3] [4 5]]", got)
	}
	if err := q.Check(); err != nil {
		t.Error(err)
	}
}

// quotaOnTwoNodes is the quota stage on twoNodes with the named placer
// (pods kept whole) in every VC, the placer, and a round's env, for a
// round called by hand.
func quotaOnTwoNodes(t *testing.T, placer string) (*Quota, policy.Placer, *policy.Env) {
	t.Helper()
	l := layoutOf(t, twoNodes)
	p, err := place.New(placer)
	if err != nil {
		t.Fatal(err)
	}
	g := place.PodGuard{Placer: p}
	q := NewQuota(l)
	q.SetIntraVC(&IntraVC{NewPlacer: func() (policy.Placer, error) { return g, nil }})
	return q, g, &policy.Env{Cluster: l.Cluster, Rand: rand.New(rand.NewPCG(1, 2))}
}
