package sim

import (
	"math"
	"math/rand/v2"
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
