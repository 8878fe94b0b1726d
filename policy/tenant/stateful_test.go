package tenant

import (
	"fmt"
	"testing"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// runHiveD runs a trace under the HiveD stage (FIFO and packed-sticky
// inside each VC, rounds of 60 s) with a preemption cost, checking the
// cells every round.
func runHiveD(t *testing.T, l *Layout, tr *workload.Trace, preemption float64, evs func(h *HiveD) []sim.StageEvent) map[int]metrics.JobRecord {
	t.Helper()
	mk := func() (policy.Placer, error) {
		p, err := place.New("packed-sticky")
		return place.PodGuard{Placer: p}, err
	}
	h, err := NewHiveD(l)
	if err != nil {
		t.Fatal(err)
	}
	h.SetIntraVC(&IntraVC{NewPlacer: mk})
	s, err := NewPerVC(l, func() (policy.Scheduler, error) { return schedule.New("fifo") })
	if err != nil {
		t.Fatal(err)
	}
	pl, _ := mk()
	var events []sim.StageEvent
	if evs != nil {
		events = evs(h)
	}
	res, err := sim.Run(sim.Config{Cluster: l.Cluster, Trace: tr, Scheduler: s, Placer: pl, Tenancy: h, StageEvents: events,
		CheckInvariants: true, Round: 60, Locality: sim.ConstantLocality(1), Costs: workload.Costs{Default: workload.MoveCost{Preemption: preemption}}})
	if err != nil {
		t.Fatal(err)
	}
	out := map[int]metrics.JobRecord{}
	for _, r := range res.Jobs {
		out[r.ID] = r
	}
	return out
}

// A guaranteed job waits while the opportunistic job on its cells
// terminates, by hand. Nodes n0, n1 (4 GPUs), VC A and VC B one node cell
// each; FIFO, packed-sticky, rounds of 60 s.
//
//   - t = 0: b1 (B, 4 GPUs, 10 rounds) binds B's cell to n0 (the first
//     free node); o (A, opportunistic, 4 GPUs) goes to n1.
//   - t = 60: a1 (A, 4 GPUs, 5 rounds) binds A's cell to n1, the only free
//     node: o is its victim. With a preemption cost of 90 s, o stops at 60
//     and leaves at 150; a1 holds n1 meanwhile and starts at the first
//     round after, 180 (with no cost, at 60). o2 (A, opportunistic, 4 GPUs,
//     arriving at 120) finds n1 taken and waits.
//   - a1 runs [180, 480) (with no cost [60, 360)); then o, ahead of o2 in
//     arrival order, runs again on n1, and o2 starts when b1 leaves n0, at
//     600.
func TestHiveDVictimTerminates(t *testing.T) {
	l := layoutOf(t, twoNodes)
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "B", 0, 4, 4, 0, 10),
		job(1, "A", tenancy.Opportunistic, 4, 4, 0, 20),
		job(2, "A", 0, 4, 4, 60, 5),
		job(3, "A", tenancy.Opportunistic, 4, 4, 120, 5),
	}}
	for _, c := range []struct {
		cost, a1, a1End, o2 float64
	}{{90, 180, 480, 600}, {0, 60, 360, 600}} {
		recs := runHiveD(t, l, tr, c.cost, nil)
		a1, o, o2 := recs[2], recs[1], recs[3]
		if a1.FirstStart != c.a1 || a1.Completion != c.a1End {
			t.Errorf("cost %g: a1 ran [%g, %g), want [%g, %g)", c.cost, a1.FirstStart, a1.Completion, c.a1, c.a1End)
		}
		if o.Preemptions != 1 {
			t.Errorf("cost %g: o preempted %d times, want once", c.cost, o.Preemptions)
		}
		if o2.FirstStart != c.o2 {
			t.Errorf("cost %g: o2 started at %g, want %g", c.cost, o2.FirstStart, c.o2)
		}
	}
}

// A VC shrinks under a running job, by hand. Nodes n0-n2 (GPUs 0-3, 4-7,
// 8-11); first VC A holds two node cells and B one, from t = 300 A one
// and B two. FIFO, packed-sticky, rounds of 60 s, no preemption cost.
//
//   - t = 0: a1 and a2 (A, 4 GPUs, 20 rounds) bind A's cells to n0 and n1;
//     b1 (B, 4 GPUs, 20 rounds) B's to n2.
//   - t = 300: the change. a1 keeps A's only cell (it started first); a2
//     no longer fits A and is lazily preempted: it runs on, on n1.
//   - t = 360: b2 (B, 4 GPUs, 5 rounds) binds B's second cell to the only
//     free node, n1: a2 is its victim and stops; b2 runs [360, 660).
//   - a2 waits for A's cell, which a1 holds until 1200, and runs again
//     from 1200 (a2 ran 360 s, so it ends at 1200 + 840 = 2040), on the
//     node buddy allocation hands out first: the free list keeps release
//     order, n1 (free since 660) before n0 (free since 1200).
func TestHiveDReconfigureShrinks(t *testing.T) {
	cells := func(a, b int) *tenancy.Config {
		cfg, err := tenancy.Parse("cells.yaml", []byte(fmt.Sprintf(`
physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
  - {cellType: NODE, cellAddress: n2}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: %d}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: %d}]}
`, a, b)))
		if err != nil {
			t.Fatal(err)
		}
		return cfg
	}
	l, err := NewLayout(cells(2, 1))
	if err != nil {
		t.Fatal(err)
	}
	tr := &workload.Trace{Name: "t.csv", Jobs: []workload.Spec{
		job(0, "A", 0, 4, 4, 0, 20), job(1, "A", 0, 4, 4, 0, 20), job(2, "B", 0, 4, 4, 0, 20), job(3, "B", 0, 4, 4, 360, 5),
	}}
	var rep tenancy.Reconfig
	recs := runHiveD(t, l, tr, 0, func(h *HiveD) []sim.StageEvent {
		return []sim.StageEvent{{T: 300, What: "cells change", Apply: func() (err error) {
			rep, err = h.Reconfigure(cells(1, 2))
			return err
		}}}
	})
	if fmt.Sprint(rep.Kept, rep.Demoted) != "[0 2] [1]" {
		t.Errorf("kept %v, lazily preempted %v; want [0 2] and [1]", rep.Kept, rep.Demoted)
	}
	a1, a2, b2 := recs[0], recs[1], recs[3]
	if a1.Preemptions != 0 || a1.Completion != 1200 {
		t.Errorf("a1: %d preemptions, done at %g; want 0 and 1200", a1.Preemptions, a1.Completion)
	}
	if b2.FirstStart != 360 || fmt.Sprint(b2.GPUIDs) != "[4 5 6 7]" {
		t.Errorf("b2 started at %g on %v, want 360 on [4 5 6 7]", b2.FirstStart, b2.GPUIDs)
	}
	if a2.Preemptions != 1 || a2.Completion != 2040 || fmt.Sprint(a2.GPUIDs) != "[4 5 6 7]" {
		t.Errorf("a2: %d preemptions, done at %g on %v; want 1, 2040 on [4 5 6 7]", a2.Preemptions, a2.Completion, a2.GPUIDs)
	}
}

// drive runs one round of the stage by hand, as a driver would: the
// answer becomes the jobs' held GPUs.
func drive(t *testing.T, h *HiveD, l *Layout, jobs []*workload.Job) [][]int {
	t.Helper()
	p, err := place.New("packed-sticky")
	if err != nil {
		t.Fatal(err)
	}
	env := &policy.Env{Cluster: l.Cluster, Rand: policy.PlacementRand(0)}
	out := h.Place(env, jobs, place.PodGuard{Placer: p})
	for i, j := range jobs {
		j.GPUsHeld = out[i]
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	return out
}

// What a Kubernetes driver sets, by hand on two 4-GPU nodes (VC A and VC
// B one node cell each): a job allowed only n1 binds A's cell there,
// although buddy allocation would hand out n0 first; and with victims
// that leave only when the driver finishes them, a guaranteed job whose
// cell has an opportunistic job on it waits, round after round, until
// the driver says that job is gone.
func TestHiveDDriverHooks(t *testing.T) {
	l := layoutOf(t, twoNodes)
	h, err := NewHiveD(l)
	if err != nil {
		t.Fatal(err)
	}
	a := workload.NewJob(job(0, "A", 0, 4, 4, 0, 10))
	h.SetAllowedNodes(func(j *workload.Job) []string {
		if j == a {
			return []string{"n1"}
		}
		return nil
	})
	if out := drive(t, h, l, []*workload.Job{a}); fmt.Sprint(out[0]) != "[4 5 6 7]" {
		t.Fatalf("a allowed only n1 got %v", out[0])
	}
	h.Finish(a)

	h2, err := NewHiveD(l)
	if err != nil {
		t.Fatal(err)
	}
	h2.SetVictimsLeaveOnFinish()
	o := workload.NewJob(job(1, "A", tenancy.Opportunistic, 4, 4, 0, 10))
	b := workload.NewJob(job(2, "B", 0, 4, 4, 0, 10))
	if out := drive(t, h2, l, []*workload.Job{b, o}); fmt.Sprint(out) != "[[0 1 2 3] [4 5 6 7]]" {
		t.Fatalf("round 1: %v", out)
	}
	g := workload.NewJob(job(3, "A", 0, 4, 4, 0, 10))
	for round := 2; round <= 3; round++ {
		if out := drive(t, h2, l, []*workload.Job{b, g, o}); out[1] != nil || out[2] != nil {
			t.Fatalf("round %d: %v (g must wait while o leaves)", round, out)
		}
	}
	h2.Finish(o)
	if out := drive(t, h2, l, []*workload.Job{b, g}); fmt.Sprint(out[1]) != "[4 5 6 7]" {
		t.Fatalf("after o left: %v", out)
	}
}

// A driver withdraws a preemption whose victim it may not evict, by hand
// on two 4-GPU nodes (VC A and VC B one node cell each): b (B) binds n0,
// the opportunistic o (A) n1; g (A) binds A's cell to n1, the only free
// node, and waits for o, which the driver never evicts (it keeps o out of
// the stage's order, as the Kubernetes driver does a bare pod). b ends
// and n0 frees: the reservation on n1 stays until the driver withdraws it
// (CancelPreemption); then g binds n0, and o is no longer leaving.
func TestHiveDCancelPreemption(t *testing.T) {
	l := layoutOf(t, twoNodes)
	h, err := NewHiveD(l)
	if err != nil {
		t.Fatal(err)
	}
	h.SetVictimsLeaveOnFinish()
	b := workload.NewJob(job(0, "B", 0, 4, 4, 0, 10))
	o := workload.NewJob(job(1, "A", tenancy.Opportunistic, 4, 4, 0, 10))
	g := workload.NewJob(job(2, "A", 0, 4, 4, 0, 10))
	if out := drive(t, h, l, []*workload.Job{b, o}); fmt.Sprint(out) != "[[0 1 2 3] [4 5 6 7]]" {
		t.Fatalf("round 1: %v", out)
	}
	if h.CancelPreemption(b) {
		t.Fatal("b is not preempting; CancelPreemption said it was")
	}
	if out := drive(t, h, l, []*workload.Job{b, g}); out[1] != nil || !h.Leaving(o) {
		t.Fatalf("round 2: %v, o leaving %v (g must wait on o)", out, h.Leaving(o))
	}
	h.Finish(b)
	b.GPUsHeld = nil
	if out := drive(t, h, l, []*workload.Job{g}); out[0] != nil {
		t.Fatalf("round 3: g got %v while it holds n1", out[0])
	}
	if !h.CancelPreemption(g) {
		t.Fatal("g is preempting; CancelPreemption said it was not")
	}
	if h.Leaving(o) {
		t.Fatal("o still leaving after the only preemption of it was withdrawn")
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	if out := drive(t, h, l, []*workload.Job{g, o}); fmt.Sprint(out) != "[[0 1 2 3] [4 5 6 7]]" {
		t.Fatalf("round 4: %v (g on n0, o running on n1)", out)
	}
}

// A preemptor finished while it waits for its victims (a driver's gang
// deleted while it waits) lets them go, by hand on one 4-GPU node (VC V
// one node cell): the opportunistic o binds GPUs 0-1; g (V, 4 GPUs)
// binds V's cell there and waits for o, which the driver never evicts
// (it keeps o out of the stage's order, as the Kubernetes driver does a
// bare pod). g is gone: the driver finishes it (Preemptors names it).
// Then o is no longer leaving, the cells are consistent, and the
// opportunistic p binds the GPUs beside o.
func TestHiveDFinishPreemptor(t *testing.T) {
	l := layoutOf(t, oneNode)
	h, err := NewHiveD(l)
	if err != nil {
		t.Fatal(err)
	}
	h.SetVictimsLeaveOnFinish()
	o := workload.NewJob(job(0, "V", tenancy.Opportunistic, 2, 2, 0, 10))
	g := workload.NewJob(job(1, "V", 0, 4, 4, 0, 10))
	p := workload.NewJob(job(2, "V", tenancy.Opportunistic, 1, 1, 0, 10))
	if out := drive(t, h, l, []*workload.Job{o}); fmt.Sprint(out) != "[[0 1]]" {
		t.Fatalf("round 1: %v", out)
	}
	if out := drive(t, h, l, []*workload.Job{g}); out[0] != nil || !h.Leaving(o) {
		t.Fatalf("round 2: %v, o leaving %v (g must wait on o)", out, h.Leaving(o))
	}
	pre := h.Preemptors()
	if len(pre) != 1 || pre[0] != g {
		t.Fatalf("preemptors %v, want g alone", pre)
	}
	h.Finish(g)
	if h.Leaving(o) {
		t.Fatal("o still leaving after its only preemptor finished")
	}
	if pre := h.Preemptors(); len(pre) != 0 {
		t.Fatalf("preemptors %v after g finished", pre)
	}
	if err := h.Check(); err != nil {
		t.Fatal(err)
	}
	if out := drive(t, h, l, []*workload.Job{o, p}); fmt.Sprint(out) != "[[0 1] [2]]" {
		t.Fatalf("round 3: %v (o running on GPUs 0-1, p beside it)", out)
	}
}

// A job adopted after the VC layers exist (a driver's restart found it
// running, or took a running gang back into the cells) and not listed by
// the next round (its pods are leaving) must still hold its virtual GPUs
// in its pool: twoNodes, B's b1 placed first (so the layers are made),
// then A's a1 adopted on the other node, which is A's one node cell. A's
// a2 must then wait, and the stage stay consistent.
func TestHiveDAdoptedAfterSetupKeepsItsCells(t *testing.T) {
	h, env := twoNodesPacked(t)
	b1 := workload.NewJob(job(1, "B", 0, 4, 4, 0, 1))
	out := h.Place(env, []*workload.Job{b1}, nil)
	b1.GPUsHeld = out[0]
	if len(b1.GPUsHeld) != 4 {
		t.Fatalf("b1 got %v, want a node", b1.GPUsHeld)
	}
	free := []int{0, 1, 2, 3}
	if b1.GPUsHeld[0] == 0 {
		free = []int{4, 5, 6, 7}
	}
	a1 := workload.NewJob(job(2, "A", 0, 4, 4, 0, 1))
	if ok, err := h.Adopt(a1, free); err != nil || !ok {
		t.Fatalf("Adopt(a1, %v) = %v, %v; want guaranteed", free, ok, err)
	}
	a1.GPUsHeld = free
	a2 := workload.NewJob(job(3, "A", 0, 2, 2, 0, 1))
	out = h.Place(env, []*workload.Job{b1, a2}, nil)
	if out[1] != nil {
		t.Errorf("a2 placed on %v while a1, adopted on %v, holds A's only cell", out[1], free)
	}
	if err := h.Check(); err != nil {
		t.Error(err)
	}
}
