package kube

import (
	"fmt"
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// createPrio is create with the pod's spec.priority (as priority
// admission writes it from a PriorityClass) and, never set,
// preemptionPolicy: Never.
func (w *world) createPrio(name string, gpus int, prio int32, never bool, at time.Time) {
	w.create(name, gpus, nil, at)
	w.mu.Lock()
	defer w.mu.Unlock()
	setPriority(w.pods["ns/"+name], prio, never)
}

// setPriority writes what priority admission would: spec.priority and,
// never set, preemptionPolicy: Never.
func setPriority(p *corev1.Pod, prio int32, never bool) {
	p.Spec.Priority = &prio
	if never {
		pp := corev1.PreemptNever
		p.Spec.PreemptionPolicy = &pp
	}
}

// Pod priority on one 4-GPU node, every gang one 4-GPU pod. Each case
// is a history of arrivals and the pods bound (or being evicted) after
// each round; the same history at one priority shows that the policy
// alone would have decided otherwise.
func TestPodPriority(t *testing.T) {
	type arrival struct {
		name  string
		prio  int32
		never bool
	}
	type step struct {
		arrive []arrival
		finish string
		want   string // bound after the round (evicted pods included)
	}
	cases := []struct {
		name  string
		sched string
		steps []step
		why   string // in the log: a waiting gang's reason
	}{{
		// FIFO never preempts: high, which came later, takes low's GPUs
		// only because of its priority.
		name: "higher priority preempts under fifo", sched: "fifo",
		steps: []step{
			{arrive: []arrival{{"low", 0, false}}, want: "ns/low@n0[0,1,2,3]"},
			{arrive: []arrival{{"high", 1000, false}}, want: "ns/low@n0[0,1,2,3]"}, // evicted, being deleted
			{want: "ns/high@n0[0,1,2,3]"},
		},
		why: "its n0 GPUs 0,1,2,3 go to pod ns/high, ordered ahead of it (by pod priority first, its own 0, then by fifo)",
	}, {
		// LAS would preempt high (long served) for low (never served):
		// low's lower priority forbids it.
		name: "lower priority never preempts under las", sched: "las",
		steps: []step{
			{arrive: []arrival{{"high", 10, false}}, want: "ns/high@n0[0,1,2,3]"},
			{want: "ns/high@n0[0,1,2,3]"},
			{arrive: []arrival{{"low", 0, false}}, want: "ns/high@n0[0,1,2,3]"},
			{want: "ns/high@n0[0,1,2,3]"},
		},
		why: "pod priority 0: 1 gang(s) of higher priority go first",
	}, {
		// Never: urgent does not evict the running low, but goes ahead
		// of low2, which waited longer.
		name: "preemptionPolicy Never waits, then goes first", sched: "fifo",
		steps: []step{
			{arrive: []arrival{{"low", 0, false}}, want: "ns/low@n0[0,1,2,3]"},
			{arrive: []arrival{{"low2", 0, false}}, want: "ns/low@n0[0,1,2,3]"},
			{arrive: []arrival{{"urgent", 1000, true}}, want: "ns/low@n0[0,1,2,3]"},
			{want: "ns/low@n0[0,1,2,3]"},
			{finish: "ns/low", want: "ns/urgent@n0[0,1,2,3]"},
		},
		why: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal: 0 GPUs free; pod priority 1000; its preemptionPolicy Never keeps it behind 1 running gang(s) of its priority or lower",
	}, {
		// high, of urgent's priority but free to preempt, evicts low;
		// urgent, ahead of high in FIFO's order, never evicts high.
		name: "preemptionPolicy Never does not preempt its own priority", sched: "fifo",
		steps: []step{
			{arrive: []arrival{{"low", 0, false}}, want: "ns/low@n0[0,1,2,3]"},
			{arrive: []arrival{{"urgent", 1000, true}}, want: "ns/low@n0[0,1,2,3]"},
			{arrive: []arrival{{"high", 1000, false}}, want: "ns/low@n0[0,1,2,3]"}, // evicted
			{want: "ns/high@n0[0,1,2,3]"},
			{want: "ns/high@n0[0,1,2,3]"},
			{want: "ns/high@n0[0,1,2,3]"},
			{finish: "ns/high", want: "ns/urgent@n0[0,1,2,3]"},
		},
		why: "gang of 1 pods (4 GPUs) waits at queue position 2 under fifo/pal: 0 GPUs free; pod priority 1000; its preemptionPolicy Never keeps it behind 1 running gang(s) of its priority or lower",
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg()
			cfg.Scheduler, cfg.Placement = tc.sched, "pal"
			w := newWorld(t, cfg, 1, 1, 4)
			at := time.Unix(1_700_000_000, 0)
			for i, st := range tc.steps {
				for _, a := range st.arrive {
					w.createPrio(a.name, 4, a.prio, a.never, at)
				}
				if st.finish != "" {
					w.finish(st.finish)
				}
				w.expect(&at, tc.name+": step "+itoa(i), st.want)
				w.recreateDeleted()
				at = at.Add(time.Hour)
			}
			if !strings.Contains(w.log.String(), tc.why) {
				t.Errorf("the log does not say %q:\n%s", tc.why, w.log.String())
			}
		})
	}
}

// Random worlds with three pod priorities (some gangs under
// preemptionPolicy: Never), FIFO and LAS over PAL and packed placement,
// six 4-GPU nodes, 120 rounds: besides the world's invariants (no device
// given twice), no gang is preempted unless a gang of its priority or
// higher was waiting (LAS preempts within a priority), and every gang
// FIFO preempts (FIFO alone never preempts) is of lower priority than a
// gang that was waiting and may preempt, and no gang is preempted unless
// a gang of its priority or higher that may preempt was waiting. (Migrations, which evict too, move a gang without taking its
// GPUs from it, and are not counted.)
func TestPodPriorityRandomWorlds(t *testing.T) {
	preempted := regexp.MustCompile(`msg="evicting gang" gang="(?:gang|pod) (ns/[^"]+)" pods=\S+ why="preempted`)
	for _, c := range []struct{ sched, place string }{{"fifo", "pal"}, {"fifo", "packed-nonsticky"}, {"las", "pal"}, {"las", "packed-nonsticky"}} {
		preemptions := 0
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("%s/%s/%d", c.sched, c.place, seed), func(t *testing.T) {
				cfg := testCfg()
				cfg.Scheduler, cfg.Placement = c.sched, c.place
				w := newWorld(t, cfg, seed, 6, 4)
				rng := rand.New(rand.NewPCG(seed, 99))
				var runs lifetimes
				gangs := 0
				prioOf := map[string]int32{}
				t0 := time.Unix(1_700_000_000, 0)
				seen := 0
				for r := range 120 {
					at := t0.Add(time.Duration(r) * 10 * time.Second)
					for range rng.IntN(3) {
						gangs++
						size, gpus := 1+rng.IntN(3), 1+rng.IntN(4)
						prio := []int32{0, 100, 1000}[rng.IntN(3)]
						never := rng.IntN(4) == 0
						g := fmt.Sprintf("g%d", gangs)
						prioOf["ns/"+g] = prio
						for i := range size {
							name := fmt.Sprintf("%s-%d", g, i)
							w.create(name, gpus, gangAnn(g, size, AnnModel, "BERT", AnnIterations, "1000000"), at)
							w.mu.Lock()
							setPriority(w.pods["ns/"+name], prio, never)
							w.mu.Unlock()
						}
					}
					runs.step(w, rng, r, 12)
					w.deliver(-1)
					// The highest priority waiting that may preempt, and of all.
					w.mu.Lock()
					var waitTop, waitAll int32 = -1, -1
					for _, p := range w.pods {
						if p.Status.Phase == corev1.PodSucceeded {
							continue
						}
						if p.Spec.NodeName == "" {
							waitAll = max(waitAll, *p.Spec.Priority)
						}
						if p.Spec.NodeName == "" && p.Spec.PreemptionPolicy == nil {
							waitTop = max(waitTop, *p.Spec.Priority)
						}
					}
					w.mu.Unlock()
					w.round(at)
					if err := w.check(); err != nil {
						t.Fatalf("round %d: %v", r, err)
					}
					log := w.log.String()
					for _, m := range preempted.FindAllStringSubmatch(log[seen:], -1) {
						preemptions++
						pr := prioOf[m[1]]
						if pr > waitAll {
							t.Errorf("round %d: %s preempted at priority %d, above every waiting gang's (highest %d)", r, m[1], pr, waitAll)
						}
						if pr > waitTop {
							t.Errorf("round %d: %s preempted at priority %d, above every waiting gang's that may preempt (highest %d)", r, m[1], pr, waitTop)
						}
						if c.sched == "fifo" && pr >= waitTop {
							t.Errorf("round %d: fifo preempted %s (priority %d) with no gang of higher priority waiting that may preempt (highest %d)", r, m[1], pr, waitTop)
						}
					}
					seen = len(log)
				}
			})
		}
		if preemptions == 0 {
			t.Errorf("%s/%s: no preemption in 3 x 120 rounds: the test saw nothing to check", c.sched, c.place)
		}
		t.Logf("%s/%s: %d preemptions", c.sched, c.place, preemptions)
	}
}

// Under Themis the auction, not an order, hands out GPUs: gangs of two
// priorities are placed as without them, and the log says once that pod
// priority is not read.
func TestPodPriorityUnderThemisWarnsOnce(t *testing.T) {
	w := newWorld(t, themisCfg(), 1, 1, 4)
	at := time.Unix(1_700_000_000, 0)
	w.createPrio("low", 2, 0, false, at)
	w.createPrio("high", 2, 1000, false, at)
	w.expect(&at, "both arrive", "ns/high@n0[0,1] ns/low@n0[2,3]")
	w.step(&at, "a round later")
	if n := strings.Count(w.log.String(), "under themis the auction hands out GPUs by finish-time fairness, and pod priority is not read"); n != 1 {
		t.Errorf("the warning logged %d times, want once:\n%s", n, w.log.String())
	}
}
