package backfill

import (
	"math"
	"testing"

	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/workload"
)

// Under EASY, PAL placement, the section's check holds on a small grid
// of all three families: with exact estimates every reserved gang under
// FIFO, and every one no job overtook under Tiresias, starts by its
// first reservation plus one round (Cell.check fails the run
// otherwise); with noisy estimates none waits past that for a
// backfilled job, and some are late because a job ahead overran (so
// that the check can fail). The Philly window is the full plan's
// (jobs from the 75,000th on 48x8), where FIFO reserves for gangs.
func TestReservationHolds(t *testing.T) {
	pp := paper.FullPlan()
	base, err := pp.Base()
	if err != nil {
		t.Fatal(err)
	}
	p := QuickPlan(pp)
	p.SiaTraces = []int{3}
	p.SynergyJobs, p.SynergyTrack, p.SynergyLoad = 2000, workload.TrackRange{First: 1000, Last: 1500}, 14
	p.PhillyCluster, p.PhillyFirst, p.PhillyJobs = "48x8", 75000, 1500
	wls, err := p.workloads(base)
	if err != nil {
		t.Fatal(err)
	}
	noisyLate := 0
	for i := range wls {
		w := &wls[i]
		for _, sched := range p.Schedulers {
			exact, err := p.cell(w, sched, "easy", 0)
			if err != nil {
				t.Error(err)
				continue
			}
			if sched == "fifo" && exact.Reserved < 5 {
				t.Errorf("%s fifo: %d reserved gangs, want at least 5", w.Name, exact.Reserved)
			}
			noisy, err := p.cell(w, sched, "easy", 1)
			if err != nil {
				t.Error(err)
				continue
			}
			noisyLate += noisy.Late
			t.Logf("%s %s: exact %d reserved, %d overtaken, %d preempted; noisy %d reserved, %d late (a job ahead overran), %d preempted",
				w.Name, sched, exact.Reserved, exact.Overtaken, exact.Preempted, noisy.Reserved, noisy.Late, noisy.Preempted)
		}
	}
	if noisyLate == 0 {
		t.Error("noisy estimates made no reserved gang late: the check cannot fail")
	}
}

// check fails a run on the figures it asserts, and only on those.
func TestCellCheck(t *testing.T) {
	for _, c := range []struct {
		name  string
		cell  Cell
		noisy bool
		fail  bool
	}{
		{"exact, none late", Cell{Scheduler: "fifo", Reserved: 9, Overtaken: 0}, false, false},
		{"exact, one late", Cell{Scheduler: "fifo", Reserved: 9, Late: 1}, false, true},
		{"fifo, overtaken late", Cell{Scheduler: "fifo", Reserved: 9, Overtaken: 1, OvertakenLate: 1}, false, true},
		{"tiresias, overtaken late", Cell{Scheduler: "tiresias-las", Reserved: 9, Overtaken: 1, OvertakenLate: 1}, false, false},
		{"noisy, a job ahead overran", Cell{Scheduler: "fifo", Reserved: 9, Late: 3}, true, false},
		{"noisy, late for a backfilled job", Cell{Scheduler: "fifo", Reserved: 9, Late: 3, LateBackfill: 1}, true, true},
		{"exact, late for a backfilled job", Cell{Scheduler: "tiresias-las", Reserved: 9, LateBackfill: 1}, false, true},
	} {
		if err := c.cell.check(c.noisy); (err != nil) != c.fail {
			t.Errorf("%s: error %v, want failure %v", c.name, err, c.fail)
		}
	}
}

// The quick plan writes every table: each run's numbers are sane, and
// the forecast made in a run of the trace cut at T is exact (the
// property sim's test holds the forward run to), while with the
// arrivals after T under Tiresias it is not.
func TestQuickPlan(t *testing.T) {
	pp := paper.FullPlan()
	base, _ := pp.Base()
	res, err := Run(t.Context(), QuickPlan(pp), base, t.TempDir(), 2, nil)
	if err != nil {
		t.Fatal(err)
	}
	// 4 workloads x 2 schedulers x (3 modes + noisy seeds: 3, Synergy 1).
	if want := 2*2*(3+3) + 2*(3+1) + 2*(3+3); len(res.Cells) != want {
		t.Errorf("%d runs, want %d", len(res.Cells), want)
	}
	for _, c := range res.Cells {
		if !(c.MeanJCT > 0) || !(c.Util > 0 && c.Util <= 1) {
			t.Errorf("%+v: mean JCT or utilisation out of range", c)
		}
	}
	cut, tiresias := 0, false
	for _, a := range res.Accuracy {
		switch {
		case a.Case == "exact-no-arrivals":
			cut += a.N
			if a.N > 0 && a.Max != 0 {
				t.Errorf("%s %s: forecast on the cut trace off by up to %v s, want 0", a.Family, a.Scheduler, a.Max)
			}
		case a.Case == "exact" && a.Scheduler == "tiresias-las" && a.Family == "sia-philly":
			tiresias = a.N > 0 && a.P90 > 0 && !math.IsNaN(a.P90)
		}
	}
	if cut < 10 {
		t.Errorf("only %d waiting jobs compared on cut traces", cut)
	}
	if !tiresias {
		t.Errorf("Tiresias' forecasts with later arrivals show no error: %+v", res.Accuracy)
	}
	if len(res.Changes()) != 8 {
		t.Errorf("%d JCT-change rows, want 8", len(res.Changes()))
	}
}
