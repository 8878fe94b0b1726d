package sim

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// keyedOnly hides every optional interface of a keyed scheduler
// (policy.ByAttained, Steady, Fixed), so that the loop takes its slow
// paths with the same keys.
type keyedOnly struct{ policy.KeyedScheduler }

// creditNext under policy.ByAttained packs the attained service itself;
// the item must be the one Key gives, for every priority and service.
func TestCreditNextByAttainedMatchesKey(t *testing.T) {
	cases := []struct {
		priority        int
		attained, round float64
	}{
		{workload.DefaultPriority, 0, 300},
		{workload.DefaultPriority, 300, 300},
		{workload.DefaultPriority, 1e9, 360},
		{1, 0, 300},
		{1, 600, 0.7 * 300},
		{-5, 1e-3 + 97, 1e-3 + 97},
		{math.MaxInt32, 1e300, 300},
		{math.MinInt32, 0, 1e-300},
	}
	for _, c := range cases {
		var got, want item
		for _, fast := range []bool{true, false} {
			x := &incremental{state: &state{}, ks: schedule.LAS{}, R: c.round, attained: fast}
			j := &job{Job: workload.Job{Priority: c.priority, Attained: c.attained,
				Spec: workload.Spec{GPUs: 1, Iterations: 1e12, IterTime: 1}, PM: 1, Loc: 1, GPUsHeld: []int{0}}}
			// Filed under its key when it started waiting, as admit and
			// rekeyWaiting file a job.
			j.setKey(x.ks.Key(0, &j.Job))
			if x.creditNext(j, c.round) {
				t.Fatalf("%+v: completed", c)
			}
			if fast {
				got = j.it
			} else {
				want = j.it
			}
		}
		if got != want {
			t.Errorf("priority %d, attained %v, round %v: item %+v, Key's %+v", c.priority, c.attained, c.round, got, want)
		}
	}
}

// relaunched keeps a job's slowdown factors when it starts again on the
// list it stopped on; every launch must leave the job as launch does.
func TestRelaunchMatchesLaunch(t *testing.T) {
	cl, _ := cluster.New(2, 2)
	raw := &variability.Table{}
	for c := range raw.Values {
		raw.Values[c] = []float64{1, 1.25, 0.9, 1.1}
	}
	last := []int{1, 2} // across the nodes: locality applies
	one := []int{3}
	cases := []struct {
		name      string
		held      []int // the list it ran on (hold set its factors), nil: never ran
		stopped   bool  // preempted since (LastGPUs is held)
		next      []int
		placement PlacementFunc
	}{
		{"the same list back", last, true, last, nil},
		{"the same list back, one GPU", one, true, one, nil},
		{"an equal copy", last, true, []int{1, 2}, nil},
		{"another list", last, true, []int{0, 1}, nil},
		{"a shorter window of the list", last, true, last[:1], nil},
		{"first launch", nil, false, last, nil},
		{"the same list back, placement model", last, true, last, func(_ *workload.Spec, g []int) float64 { return float64(len(g)) + 0.5 }},
	}
	for _, c := range cases {
		var jobs [2]workload.Job
		for k, fast := range []bool{true, false} {
			cfg := &Config{Raw: raw, Locality: ConstantLocality(1.5), Placement: c.placement}
			x := &incremental{state: &state{cfg: cfg, cl: cl}}
			j := &jobs[k]
			*j = workload.Job{Spec: workload.Spec{GPUs: len(c.next), Class: variability.Class(1)}, FirstStart: -1}
			if c.held != nil {
				x.launch(j, c.held, 100)
			}
			if c.stopped {
				x.preempt(j)
			}
			if fast {
				if !x.relaunched(j, c.next) {
					x.launch(j, c.next, 400)
				}
			} else {
				x.launch(j, c.next, 400)
			}
		}
		if got, want := fmt.Sprintf("%+v", jobs[0]), fmt.Sprintf("%+v", jobs[1]); got != want || &jobs[0].GPUsHeld[0] != &c.next[0] {
			t.Errorf("%s: relaunched\n %s\nlaunched\n %s", c.name, got, want)
		}
	}
}

// The whole loop with LAS's optional interfaces hidden (Key through the
// interface, every waiting job asked WakeAfter) gives LAS's results.
func TestByAttainedMatchesKeyedOnly(t *testing.T) {
	for _, pn := range []string{"pal", "pm-first", "packed-sticky"} {
		cfg := Config{Round: 300, Locality: ConstantLocality(1.5), Seed: 3, MaxRounds: 5000, StarvationGuard: 3000}
		cl, _ := cluster.New(3, 2)
		cfg.Cluster = cl
		cfg.Raw, cfg.Scores = randomScores(rand.New(rand.NewPCG(7, 7)), cl.Size())
		var jobs []workload.Spec
		for i := range 40 {
			s := spec(i, 1+i%3, float64(100*(i/4)), float64(200+97*(i%11)))
			s.Class = variability.Class(i % variability.NumClasses)
			jobs = append(jobs, s)
		}
		cfg.Trace = &workload.Trace{Name: "t.csv", Jobs: jobs}
		want, wantErr := runLoop(t, cfg, func() policy.Scheduler { return keyedOnly{schedule.LAS{}} }, pn, false, false, false)
		got, err := runLoop(t, cfg, func() policy.Scheduler { return schedule.LAS{} }, pn, false, false, false)
		if err != wantErr || err != "" {
			t.Fatalf("%s: error %q, keyed only %q", pn, err, wantErr)
		}
		if d := sameResult(want, got); d != "" {
			t.Fatalf("%s: %s", pn, d)
		}
		if got.Summary.Preemptions < 20 {
			t.Fatalf("%s: %d preemptions: too few for the test to test", pn, got.Summary.Preemptions)
		}
	}
}

// reach cuts a stretch at the next running job before summing when that
// job comes within the items the sum could reach; it must give what
// walking the items one by one gives.
func TestReachMatchesWalk(t *testing.T) {
	// walk is reach's definition: items in order while they come before
	// run[0], up to and including the one that takes the demand past the
	// limit.
	walk := func(gpus []int32, limit int, its, run []item, demand int) (int, int) {
		n, d := 0, demand
		for _, w := range its {
			if len(run) > 0 && !itemLess(w, run[0]) {
				break
			}
			n, d = n+1, d+int(gpus[w.slot])
			if d > limit {
				break
			}
		}
		return n, d
	}
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 20000 {
		limit := 1 + rng.IntN(40)
		its := make([]item, rng.IntN(60)+1)
		gpus := make([]int32, len(its))
		for k := range its {
			gpus[k] = int32(1 + rng.IntN(min(limit, 4)))
			its[k] = item{lo: uint64(rng.IntN(50)), seq: int32(rng.IntN(1000)), slot: int32(k)}
		}
		slices.SortFunc(its, func(a, b item) int { return cmp.Compare(a.lo, b.lo)*2 + cmp.Compare(a.seq, b.seq) })
		var run []item
		for range rng.IntN(3) {
			run = append(run, item{lo: uint64(rng.IntN(60)), seq: int32(1000 + rng.IntN(1000))})
		}
		slices.SortFunc(run, func(a, b item) int { return cmp.Compare(a.lo, b.lo)*2 + cmp.Compare(a.seq, b.seq) })
		demand := rng.IntN(limit + 1)
		x := &incremental{gpus: gpus, limit: limit}
		n, d := x.reach(its, run, demand)
		if wn, wd := walk(gpus, limit, its, run, demand); n != wn || d != wd {
			t.Fatalf("trial %d: limit %d, demand %d, %d items, run %v: reach %d items (demand %d), walk %d (%d)",
				trial, limit, demand, len(its), run, n, d, wn, wd)
		}
	}
}
