package kube

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// createGuarded is createPrio with the pod labelled app=app, which
// guard's budget selects.
func (w *world) createGuarded(name string, gpus int, prio int32, app string, at time.Time) {
	w.createPrio(name, gpus, prio, false, at)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.pods["ns/"+name].Labels = map[string]string{"app": app}
}

// guard is a PodDisruptionBudget over the pods labelled app=app that
// allows no disruption: the Eviction API would refuse any of them (its
// status counts their unready pods too: none is healthy).
func guard(app string) *policyv1.PodDisruptionBudget {
	b := pdb(app+"-budget", app, 0)
	b.Status.CurrentHealthy = 0
	return b
}

// disruptions lists, in order, the disruptive requests the world's
// apiserver got: "evict ns/x", "mark ns/x REASON: MESSAGE" (a status
// patch with a DisruptionTarget condition), "delete ns/x uid=UID" (the
// UID precondition's; "none" without one).
func (w *world) disruptions() []string {
	var out []string
	for _, a := range w.cs.Actions() {
		if a.GetResource().Resource != "pods" {
			continue
		}
		key := ""
		switch act := a.(type) {
		case k8stesting.CreateAction:
			if act.GetSubresource() == "eviction" {
				ev := act.GetObject().(*policyv1.Eviction)
				out = append(out, "evict "+ev.Namespace+"/"+ev.Name)
			}
		case k8stesting.PatchAction:
			key = act.GetNamespace() + "/" + act.GetName()
			if act.GetSubresource() != "status" {
				continue
			}
			var body struct {
				Status struct {
					Conditions []corev1.PodCondition `json:"conditions"`
				} `json:"status"`
			}
			if err := json.Unmarshal(act.GetPatch(), &body); err != nil {
				out = append(out, "bad status patch of "+key+": "+err.Error())
				continue
			}
			for _, c := range body.Status.Conditions {
				if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue {
					out = append(out, "mark "+key+" "+c.Reason+": "+c.Message)
				}
			}
		case k8stesting.DeleteAction:
			key = act.GetNamespace() + "/" + act.GetName()
			uid := "none"
			if pre := act.GetDeleteOptions().Preconditions; pre != nil && pre.UID != nil {
				uid = string(*pre.UID)
			}
			out = append(out, "delete "+key+" uid="+uid)
		}
	}
	return out
}

// uidOf is the UID of the world's pod key ("" when gone).
func (w *world) uidOf(key string) string {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pods[key]; p != nil {
		return string(p.UID)
	}
	return ""
}

// beingDeleted lists the keys of the pods being deleted.
func (w *world) beingDeleted() []string {
	var out []string
	for _, p := range w.deleting() {
		out = append(out, p.Namespace+"/"+p.Name)
	}
	return out
}

// A running 4-GPU pod of priority 0 that a budget protects (it allows no
// disruption) fills the one node; a pod of priority 1000 arrives. Off
// (the default), the budget keeps low running for good, and high waits
// naming it. On, low is preempted past its budget: its pod is marked
// DisruptionTarget (reason PreemptionByScheduler, naming high) and then
// deleted under its UID, never through the Eviction API (which would
// refuse it), and high binds once low is gone.
func TestPreemptPastBudgets(t *testing.T) {
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprintf("preemptPastBudgets=%v", on), func(t *testing.T) {
			cfg := testCfg()
			cfg.Scheduler, cfg.Placement, cfg.PreemptPastBudgets = "fifo", "pal", on
			w := newWorld(t, cfg, 1, 1, 4)
			w.s.budgets.put(guard("low"), false)
			at := time.Unix(1_700_000_000, 0)
			w.createGuarded("low", 4, 0, "low", at)
			w.expect(&at, "low binds", "ns/low@n0[0,1,2,3]")
			lowUID := w.uidOf("ns/low")
			w.createPrio("high", 4, 1000, false, at)
			w.expect(&at, "high arrives", "ns/low@n0[0,1,2,3]")
			if !on {
				for r := range 3 {
					w.recreateDeleted()
					w.expect(&at, "off, round "+itoa(r), "ns/low@n0[0,1,2,3]")
				}
				if d := w.disruptions(); len(d) > 0 || len(w.beingDeleted()) > 0 {
					t.Fatalf("off: requests %q, pods being deleted %v; want none (the budget keeps low)", d, w.beingDeleted())
				}
				for _, want := range []string{
					"left on n0 GPUs 0,1,2,3, never moved or preempted while its disruption budgets refuse its eviction: its pod ns/low is covered by PodDisruptionBudget ns/low-budget",
					"0 GPUs free; 4 GPUs are held by gangs it may not evict: pod ns/low (a disruption budget)",
				} {
					if !strings.Contains(w.log.String(), want) {
						t.Errorf("off: the log does not say %q:\n%s", want, w.log.String())
					}
				}
				return
			}
			want := []string{
				"mark ns/low PreemptionByScheduler: pal: preempting to accommodate pod ns/high (pod priority 1000) of higher priority, past the pod's PodDisruptionBudget",
				"delete ns/low uid=" + lowUID,
			}
			if got := w.disruptions(); !slices.Equal(got, want) {
				t.Fatalf("on: requests %q, want %q\n%s", got, want, w.log.String())
			}
			if got := w.beingDeleted(); !slices.Equal(got, []string{"ns/low"}) {
				t.Fatalf("on: being deleted %v, want ns/low", got)
			}
			w.mu.Lock()
			cond := slices.IndexFunc(w.pods["ns/low"].Status.Conditions, func(c corev1.PodCondition) bool {
				return c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == corev1.PodReasonPreemptionByScheduler
			})
			w.mu.Unlock()
			if cond < 0 {
				t.Errorf("on: low's pod has no DisruptionTarget condition")
			}
			for _, want := range []string{
				`msg="evicting gang" gang="pod ns/low" pods=ns/low why="preempted at queue position 2 under fifo: its n0 GPUs 0,1,2,3 go to pod ns/high, ordered ahead of it (by pod priority first, its own 0, then by fifo); ` +
					"its disruption budgets refuse its eviction (its pod ns/low is covered by PodDisruptionBudget ns/low-budget, which allows 0 disruptions now, and the Eviction API would refuse 1 of them), " +
					"overridden under preemptPastBudgets for pod ns/high (pod priority 1000), above its own pod priority 0: its pods are marked DisruptionTarget and deleted, as kube-scheduler preempts",
			} {
				if !strings.Contains(w.log.String(), want) {
					t.Errorf("on: the log does not say %q:\n%s", want, w.log.String())
				}
			}
			w.recreateDeleted() // its controller makes low again, pending
			w.expect(&at, "on, low gone", "ns/high@n0[0,1,2,3]")
			w.expect(&at, "on, low waits", "ns/high@n0[0,1,2,3]")
			if got := w.disruptions(); len(got) != 2 {
				t.Errorf("on: requests %q after high bound, want only low's two", got)
			}
		})
	}
}

// On one 4-GPU node two 2-GPU pods of priority 0 run, one protected by a
// budget, one not; a 2-GPU pod of priority 1000 arrives, and either
// would do. The unprotected one is preempted (evicted, as any
// preemption), whichever came first and under each placement; the
// protected one runs on.
func TestPreemptPastBudgetsTakesUnprotectedFirst(t *testing.T) {
	for _, place := range []string{"pal", "pal-ma", "packed-sticky", "packed-nonsticky"} {
		for _, guardedFirst := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/guarded-first=%v", place, guardedFirst), func(t *testing.T) {
				cfg := testCfg()
				cfg.Scheduler, cfg.Placement, cfg.PreemptPastBudgets = "fifo", place, true
				w := newWorld(t, cfg, 1, 1, 4)
				w.s.budgets.put(guard("guarded"), false)
				at := time.Unix(1_700_000_000, 0)
				if guardedFirst {
					w.createGuarded("guarded", 2, 0, "guarded", at)
					w.step(&at, "guarded binds")
					w.createPrio("plain", 2, 0, false, at)
				} else {
					w.createPrio("plain", 2, 0, false, at)
					w.step(&at, "plain binds")
					w.createGuarded("guarded", 2, 0, "guarded", at)
				}
				w.step(&at, "both bound")
				w.createPrio("high", 2, 1000, false, at)
				w.step(&at, "high arrives")
				if got, want := w.disruptions(), []string{"evict ns/plain"}; !slices.Equal(got, want) {
					t.Fatalf("requests %q, want %q (the unprotected pod of the same priority first)\n%s", got, want, w.log.String())
				}
				w.recreateDeleted()
				got := w.step(&at, "plain gone")
				if !strings.Contains(got, "ns/high@n0") || !strings.Contains(got, "ns/guarded@n0") {
					t.Fatalf("bound %s, want high and guarded", got)
				}
				w.step(&at, "plain waits")
				if got, want := w.disruptions(), []string{"evict ns/plain"}; !slices.Equal(got, want) {
					t.Fatalf("requests %q after high bound, want %q", got, want)
				}
			})
		}
	}
}

// Two protected 4-GPU pods of priority 0 fill an 8-GPU node; a 4-GPU pod
// of priority 1000 arrives. One of them is deleted for it (a
// non-sticky placement that hands the other's GPUs to the first, of the
// same priority, is refused that and placed again), and high binds.
func TestPreemptPastBudgetsTwoProtected(t *testing.T) {
	for _, place := range []string{"pal", "pal-ma", "packed-sticky", "packed-nonsticky"} {
		t.Run(place, func(t *testing.T) {
			cfg := testCfg()
			cfg.Scheduler, cfg.Placement, cfg.PreemptPastBudgets = "fifo", place, true
			w := newWorld(t, cfg, 1, 1, 8)
			w.s.budgets.put(guard("guarded"), false)
			at := time.Unix(1_700_000_000, 0)
			w.createGuarded("p1", 4, 0, "guarded", at)
			w.createGuarded("p2", 4, 0, "guarded", at.Add(time.Second))
			w.step(&at, "both bind")
			w.createPrio("high", 4, 1000, false, at)
			w.step(&at, "high arrives")
			var deleted []string
			for _, d := range w.disruptions() {
				if strings.HasPrefix(d, "delete ") || strings.HasPrefix(d, "evict ") {
					deleted = append(deleted, d)
				}
			}
			if len(deleted) != 1 || !strings.HasPrefix(deleted[0], "delete ") {
				t.Fatalf("requests %q; want one protected pod deleted\n%s", w.disruptions(), w.log.String())
			}
			w.recreateDeleted()
			if got := w.step(&at, "one gone"); !strings.Contains(got, "ns/high@n0") {
				t.Fatalf("bound %s, want high bound\n%s", got, w.log.String())
			}
		})
	}
}

// A protected gang is preempted past its budget only for a gang of
// strictly higher priority that may preempt, and only when such a gang
// takes its GPUs. Each case runs protected pod p (4 GPUs, on n0) and
// the pods of others, then the waiting ones arrive; over four rounds p
// is neither evicted nor deleted, and the log says what keeps it.
func TestPreemptPastBudgetsOnlyForHigherPriority(t *testing.T) {
	type arrival struct {
		name  string
		gpus  int
		prio  int32
		never bool
		bare  bool
		size  int // pods in the gang (0: one)
	}
	for _, tc := range []struct {
		name  string
		sched string
		nodes int
		pPrio int32
		first []arrival // bound before the waiting ones arrive
		wait  []arrival
		why   string // in the log
	}{{
		// LAS would preempt p (long served) for w (never served) were it
		// not protected; its priority is p's.
		name: "equal priority", sched: "las", nodes: 1,
		wait: []arrival{{name: "w", gpus: 4}},
		why:  "0 GPUs free; 4 GPUs are held by gangs it may not evict: pod ns/p (a disruption budget)",
	}, {
		name: "lower priority", sched: "las", nodes: 1, pPrio: 100,
		wait: []arrival{{name: "w", gpus: 4}},
		why:  "0 GPUs free; 4 GPUs are held by gangs it may not evict: pod ns/p (a disruption budget)",
	}, {
		name: "higher priority under preemptionPolicy Never", sched: "fifo", nodes: 1,
		wait: []arrival{{name: "w", gpus: 4, prio: 1000, never: true}},
		why:  "0 GPUs free; pod priority 1000; 4 GPUs are held by gangs it may not evict: pod ns/p (a disruption budget)",
	}, {
		// h (two 4-GPU pods) needs both nodes, and a bare pod of
		// priority 0 holds n1 for good: p's GPUs would stay free.
		name: "higher priority that its GPUs would not serve", sched: "fifo", nodes: 2,
		first: []arrival{{name: "b", gpus: 4, bare: true}},
		wait:  []arrival{{name: "h", gpus: 4, prio: 1000, size: 2}},
		why:   "preemptPastBudgets preempts it only for gangs of pod priority above its own 0 that may preempt, and no gang would take its GPUs",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCfg()
			cfg.Scheduler, cfg.Placement, cfg.PreemptPastBudgets = tc.sched, "packed-sticky", true
			w := newWorld(t, cfg, 1, tc.nodes, 4)
			w.s.budgets.put(guard("p"), false)
			at := time.Unix(1_700_000_000, 0)
			w.createGuarded("p", 4, tc.pPrio, "p", at)
			w.expect(&at, "p binds", "ns/p@n0[0,1,2,3]")
			create := func(a arrival) {
				n := max(a.size, 1)
				for i := range n {
					name, ann := a.name, map[string]string(nil)
					if a.size > 0 {
						name, ann = fmt.Sprintf("%s-%d", a.name, i), gangAnn(a.name, a.size)
					}
					var owners []metav1.OwnerReference
					if a.bare {
						owners = []metav1.OwnerReference{}
					}
					w.createWith(name, a.gpus, ann, at, owners)
					w.mu.Lock()
					setPriority(w.pods["ns/"+name], a.prio, a.never)
					w.mu.Unlock()
				}
			}
			for _, a := range tc.first {
				create(a)
			}
			w.step(&at, "the first ones bind")
			for r := range 4 {
				if r == 1 {
					for _, a := range tc.wait {
						create(a)
					}
				}
				w.recreateDeleted()
				if got := w.step(&at, "round "+itoa(r)); !strings.Contains(got, "ns/p@n0[0,1,2,3]") {
					t.Fatalf("round %d: bound %s, want p still on n0", r, got)
				}
			}
			if d := w.disruptions(); len(d) > 0 {
				t.Fatalf("requests %q, want none\n%s", d, w.log.String())
			}
			if !strings.Contains(w.log.String(), tc.why) {
				t.Errorf("the log does not say %q:\n%s", tc.why, w.log.String())
			}
		})
	}
}

// A protected gang is never migrated. One 1-GPU pod p (BERT, class B)
// runs on node slow, where class B runs 20% slower than on node fast; a
// 1-GPU pod h of priority 1000 (resnet50, class A, fastest on node x)
// waits, so preemptPastBudgets puts p in the round's order. The pal
// placement (not migration-aware) would move p to fast: without a budget
// it is evicted for that; with one the move is refused, p runs on where
// it is, untouched, and h binds on x.
func TestPreemptPastBudgetsNeverMigrates(t *testing.T) {
	scores := "node,gpu_index,class,score\n"
	for _, c := range []string{"A", "B", "C", "D"} {
		s, f, x := "1.2", "1.0", "1.2"
		if c == "A" {
			f, x = "1.2", "1.0"
		}
		scores += "slow,0," + c + "," + s + "\nfast,0," + c + "," + f + "\nx,0," + c + "," + x + "\n"
	}
	for _, protected := range []bool{false, true} {
		t.Run(fmt.Sprintf("protected=%v", protected), func(t *testing.T) {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "pal-system", Name: "pal-variability"},
				Data: map[string]string{ScoresKey: scores}}
			p := readyPod("p", "p")
			p.Spec.NodeName = "slow"
			p.Annotations = map[string]string{AnnGPUIndices: "0", AnnModel: "BERT", AnnIterations: "1000000"}
			p = owned(p)
			setPriority(p, 0, false)
			h := owned(pod("h", 1, map[string]string{AnnModel: "resnet50"}, ""))
			setPriority(h, 1000, false)
			objs := []runtime.Object{node("slow", 1), node("fast", 1), node("x", 1), cm, p, h}
			if protected {
				objs = append(objs, guard("p"))
			}
			cs, fc := newFake(t, objs...)
			cfg := testCfg()
			cfg.Placement, cfg.PreemptPastBudgets = "pal", true
			s, log := startLogged(t, cfg, cs)
			roundWait(s, context.Background(), time.Now())
			var touched []string
			for _, a := range cs.Actions() {
				if a.GetResource().Resource == "pods" && (a.GetVerb() == "delete" || a.GetSubresource() == "status" || a.GetSubresource() == "eviction") {
					touched = append(touched, a.GetVerb()+"/"+a.GetSubresource())
				}
			}
			if !protected {
				if !slices.Equal(fc.evicted, []string{"p"}) {
					t.Fatalf("unprotected: evicted %v, want p (migrated to fast)\n%s", fc.evicted, log.String())
				}
				return
			}
			if len(touched) > 0 {
				t.Fatalf("protected: requests %v on pods, want none (never migrated)\n%s", touched, log.String())
			}
			if b := fc.binds["h"]; b == nil || b.Target.Name != "x" {
				t.Errorf("protected: h bound %v, want on x\n%s", b, log.String())
			}
			if want := "kept on slow GPU 0: the pal placement would migrate it, but its pod ns/p is covered by PodDisruptionBudget ns/p-budget"; !strings.Contains(log.String(), want) {
				t.Errorf("protected: the log does not say %q:\n%s", want, log.String())
			}
		})
	}
}

// A bare pod (no controller) is never deleted past its budget: nothing
// would make it again. Not even under preemptBarePods, which lets a
// round evict a bare pod that no budget protects: p stays, and h (of
// priority 1000) waits, naming the budget.
func TestPreemptPastBudgetsNeverDeletesBarePods(t *testing.T) {
	for _, preemptBare := range []bool{false, true} {
		t.Run(fmt.Sprintf("preemptBarePods=%v", preemptBare), func(t *testing.T) {
			cfg := testCfg()
			cfg.Scheduler, cfg.Placement = "fifo", "pal"
			cfg.PreemptPastBudgets, cfg.PreemptBarePods = true, preemptBare
			w := newWorld(t, cfg, 1, 1, 4)
			w.s.budgets.put(guard("p"), false)
			at := time.Unix(1_700_000_000, 0)
			w.createWith("p", 4, nil, at, []metav1.OwnerReference{})
			w.mu.Lock()
			w.pods["ns/p"].Labels = map[string]string{"app": "p"}
			w.mu.Unlock()
			w.expect(&at, "p binds", "ns/p@n0[0,1,2,3]")
			w.createPrio("h", 4, 1000, false, at)
			for r := range 3 {
				w.expect(&at, "round "+itoa(r), "ns/p@n0[0,1,2,3]")
			}
			if d := w.disruptions(); len(d) > 0 || len(w.beingDeleted()) > 0 {
				t.Fatalf("requests %q, being deleted %v; want none (p is bare)\n%s", d, w.beingDeleted(), w.log.String())
			}
			if strings.Contains(w.log.String(), `msg="evicting gang" gang="pod ns/p"`) {
				t.Fatalf("the round planned p's eviction:\n%s", w.log.String())
			}
			if want := "0 GPUs free; 4 GPUs are held by gangs it may not evict: pod ns/p (a disruption budget)"; !strings.Contains(w.log.String(), want) {
				t.Errorf("the log does not say %q:\n%s", want, w.log.String())
			}
		})
	}
}

// pastBudgetTakers on hand-made plans: victim v (pod priority 10) held
// GPUs 0-3 of one node, and each case says who holds them after the
// plan. The preemption goes on only when some gang takes them and every
// one that does is of higher priority and may preempt (a waiting gang
// under preemptionPolicy: Never may not; a running one, moved there, is
// not asked).
func TestPastBudgetTakers(t *testing.T) {
	type holder struct {
		gpus    []int
		prio    int32
		never   bool
		running bool
	}
	for _, c := range []struct {
		name    string
		holders []holder
		takers  string // "" when refused
		whyNot  string
	}{
		{name: "higher takes all", holders: []holder{{gpus: []int{0, 1, 2, 3}, prio: 11}}, takers: "gang ns/g0 (pod priority 11)"},
		{name: "higher takes some, the rest stay free", holders: []holder{{gpus: []int{0, 1}, prio: 1000}}, takers: "gang ns/g0 (pod priority 1000)"},
		{name: "two higher", holders: []holder{{gpus: []int{0, 1}, prio: 1000}, {gpus: []int{2, 3}, prio: 500}},
			takers: "gang ns/g0 (pod priority 1000), gang ns/g1 (pod priority 500)"},
		{name: "a running gang of higher priority moved there", holders: []holder{{gpus: []int{0, 1, 2, 3}, prio: 1000, never: true, running: true}},
			takers: "gang ns/g0 (pod priority 1000)"},
		{name: "all stay free", whyNot: "no gang would take its GPUs"},
		{name: "equal", holders: []holder{{gpus: []int{0, 1, 2, 3}, prio: 10}}, whyNot: "its GPUs would go to gang ns/g0 (pod priority 10)"},
		{name: "lower", holders: []holder{{gpus: []int{0, 1, 2, 3}, prio: -5}}, whyNot: "its GPUs would go to gang ns/g0 (pod priority -5)"},
		{name: "higher under Never", holders: []holder{{gpus: []int{0, 1, 2, 3}, prio: 1000, never: true}},
			whyNot: "its GPUs would go to gang ns/g0 (pod priority 1000), whose preemptionPolicy is Never"},
		{name: "higher and equal", holders: []holder{{gpus: []int{0, 1}, prio: 1000}, {gpus: []int{2, 3}, prio: 10}},
			whyNot: "its GPUs would go to gang ns/g1 (pod priority 10)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cl, err := cluster.New(1, 8)
			if err != nil {
				t.Fatal(err)
			}
			mk := func(name string, id int, prio int32, never, running bool) *gang {
				p := pod(name+"-0", 1, nil, "")
				setPriority(p, prio, never)
				j := workload.NewJob(workload.Spec{ID: id, GPUs: 4})
				g := &gang{Key: "ns/" + name, Job: j}
				if running {
					j.GPUsHeld = []int{4, 5, 6, 7}
					p.Spec.NodeName = "n0"
					g.Bound = []*corev1.Pod{p}
				} else {
					g.Pending = []*corev1.Pod{p}
				}
				return g
			}
			v := mk("v", 100, 10, false, true)
			byJob := map[*workload.Job]*gang{v.Job: v}
			for i, h := range c.holders {
				g := mk(fmt.Sprintf("g%d", i), i, h.prio, h.never, h.running)
				byJob[g.Job] = g
				if err := cl.Assign(i, h.gpus); err != nil {
					t.Fatal(err)
				}
			}
			var s Scheduler
			d := round.Decision{Job: v.Job, Kind: round.Preempt, From: []int{0, 1, 2, 3}}
			takers, whyNot := s.pastBudgetTakers(&snapshot{Cluster: cl}, d, byJob)
			if takers != c.takers {
				t.Errorf("takers %q, want %q (why not: %q)", takers, c.takers, whyNot)
			}
			if c.whyNot != "" && !strings.HasSuffix(whyNot, "that may preempt, and "+c.whyNot) {
				t.Errorf("why not %q, want it to end in %q", whyNot, c.whyNot)
			}
			if c.whyNot == "" && whyNot != "" {
				t.Errorf("why not %q, want none", whyNot)
			}
		})
	}
}
