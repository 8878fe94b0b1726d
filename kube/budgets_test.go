package kube

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	k8stesting "k8s.io/client-go/testing"
)

// pdb is budget name in namespace ns over pods labelled app=app, allowing
// allowed disruptions, its status current.
func pdb(name, app string, allowed int32) *policyv1.PodDisruptionBudget {
	one := intstr.FromInt32(1)
	return &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Generation: 1},
		Spec:       policyv1.PodDisruptionBudgetSpec{MinAvailable: &one, Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": app}}},
		Status:     policyv1.PodDisruptionBudgetStatus{ObservedGeneration: 1, DisruptionsAllowed: allowed, CurrentHealthy: 2, DesiredHealthy: 1, ExpectedPods: 2},
	}
}

// readyPod is a running, ready pod labelled app=app.
func readyPod(name, app string) *corev1.Pod {
	p := running(pod(name, 1, nil, "n0"))
	p.Labels = map[string]string{"app": app}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	return p
}

func TestBudgetBlocks(t *testing.T) {
	unready := func(p *corev1.Pod) *corev1.Pod { p.Status.Conditions[0].Status = corev1.ConditionFalse; return p }
	always := func(b *policyv1.PodDisruptionBudget) *policyv1.PodDisruptionBudget {
		p := policyv1.AlwaysAllow
		b.Spec.UnhealthyPodEvictionPolicy = &p
		return b
	}
	for _, c := range []struct {
		name string
		pdbs []*policyv1.PodDisruptionBudget
		pods []*corev1.Pod
		want string // "" or a part of the reason
	}{
		{name: "no budget", pods: []*corev1.Pod{readyPod("a", "x")}},
		{name: "another app's budget", pdbs: []*policyv1.PodDisruptionBudget{pdb("b", "y", 0)}, pods: []*corev1.Pod{readyPod("a", "x")}},
		{name: "allows both", pdbs: []*policyv1.PodDisruptionBudget{pdb("b", "x", 2)}, pods: []*corev1.Pod{readyPod("a", "x"), readyPod("c", "x")}},
		{name: "allows one of two", pdbs: []*policyv1.PodDisruptionBudget{pdb("b", "x", 1)}, pods: []*corev1.Pod{readyPod("a", "x"), readyPod("c", "x")},
			want: "its pods ns/a, ns/c are covered by PodDisruptionBudget ns/b, which allows 1 disruption now, and the Eviction API would refuse 1 of them"},
		{name: "allows none", pdbs: []*policyv1.PodDisruptionBudget{pdb("b", "x", 0)}, pods: []*corev1.Pod{readyPod("a", "x")},
			want: "its pod ns/a is covered by PodDisruptionBudget ns/b, which allows 0 disruptions now, and the Eviction API would refuse 1 of them"},
		{name: "two budgets", pdbs: []*policyv1.PodDisruptionBudget{pdb("b", "x", 5), pdb("d", "x", 5)}, pods: []*corev1.Pod{readyPod("a", "x")},
			want: "pod ns/a is covered by more than one PodDisruptionBudget (ns/b, ns/d)"},
		{name: "status behind spec", pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget { b := pdb("b", "x", 5); b.Generation = 2; return b }()},
			pods: []*corev1.Pod{readyPod("a", "x")}, want: "whose status the disruption controller has not caught up with"},
		{name: "the controller cannot compute it", pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
			b := pdb("b", "x", 0)
			b.Generation = 2
			b.Status.Conditions = []metav1.Condition{{Type: policyv1.DisruptionAllowedCondition, Status: metav1.ConditionFalse, Reason: policyv1.SyncFailedReason,
				Message: "jobs.batch does not implement the scale subresource"}}
			return b
		}()}, pods: []*corev1.Pod{readyPod("a", "x")},
			want: "its pod ns/a is covered by PodDisruptionBudget ns/b, which the disruption controller cannot compute (SyncFailed: jobs.batch does not implement the scale subresource), so the Eviction API refuses them; an integer minAvailable needs no controller's scale"},
		{name: "not running", pdbs: []*policyv1.PodDisruptionBudget{pdb("b", "x", 0)},
			pods: []*corev1.Pod{func() *corev1.Pod { p := readyPod("a", "x"); p.Status.Phase = corev1.PodPending; return p }()}},
		{name: "unready, budget healthy", pdbs: []*policyv1.PodDisruptionBudget{pdb("b", "x", 0)}, pods: []*corev1.Pod{unready(readyPod("a", "x"))}},
		{name: "unready, budget short", pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget { b := pdb("b", "x", 0); b.Status.CurrentHealthy = 0; return b }()},
			pods: []*corev1.Pod{unready(readyPod("a", "x"))}, want: "allows 0 disruptions"},
		{name: "unready, AlwaysAllow", pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
			b := always(pdb("b", "x", 0))
			b.Status.CurrentHealthy = 0
			return b
		}()}, pods: []*corev1.Pod{unready(readyPod("a", "x"))}},
		{name: "no selector covers nothing", pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget { b := pdb("b", "x", 0); b.Spec.Selector = nil; return b }()},
			pods: []*corev1.Pod{readyPod("a", "x")}},
		{name: "empty selector covers the namespace", pdbs: []*policyv1.PodDisruptionBudget{func() *policyv1.PodDisruptionBudget {
			b := pdb("b", "x", 0)
			b.Spec.Selector = &metav1.LabelSelector{}
			return b
		}()}, pods: []*corev1.Pod{readyPod("a", "z")}, want: "allows 0 disruptions"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var b budgets
			for _, p := range c.pdbs {
				b.put(p, false)
			}
			got := b.blocks(c.pods)
			if c.want == "" && got != "" || c.want != "" && !strings.Contains(got, c.want) {
				t.Errorf("blocks: %q, want %q", got, c.want)
			}
		})
	}
	// A budget deleted covers nothing any more.
	var b budgets
	b.put(pdb("b", "x", 0), false)
	b.put(pdb("b", "x", 0), true)
	if got := b.blocks([]*corev1.Pod{readyPod("a", "x")}); got != "" {
		t.Errorf("after the delete: %q, want nothing", got)
	}
}

// LAS with packed-nonsticky on one 4-GPU node, as in
// TestLaunchWaitsForPreemptedPods: gang old (two 2-GPU pods) has run 100 s
// when gang new arrives, and LAS would preempt old for it. A
// PodDisruptionBudget over old's pods allows one disruption: the Eviction
// API would evict one pod and refuse the other, so old is not evicted at
// all, and told why. When the budget allows two, old is preempted whole.
// The same for a gang of bare pods under preemptBarePods: a budget keeps
// what the config would let go.
func TestBudgetKeepsGangWhole(t *testing.T) {
	for _, bare := range []bool{false, true} {
		t.Run(map[bool]string{false: "controller's pods", true: "bare pods, preemptBarePods"}[bare], func(t *testing.T) { budgetKeepsGangWhole(t, bare) })
	}
}

func budgetKeepsGangWhole(t *testing.T, bare bool) {
	old := func(name, idx string) *corev1.Pod {
		p := running(pod(name, 2, oldAnn(idx), "n0"))
		if !bare {
			p = owned(p)
		}
		p.Labels = map[string]string{"app": "old"}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	budget := pdb("old-budget", "old", 1)
	cs, fc := newFake(t, node("n0", 4), old("old-0", "0,1"), old("old-1", "2,3"), budget)
	cfg := testCfg()
	cfg.Scheduler, cfg.Placement = "las", "packed-nonsticky"
	cfg.PreemptBarePods = bare
	s, log := startLogged(t, cfg, cs)
	ctx := context.Background()
	t0 := time.Now()
	roundWait(s, ctx, t0)
	arriveNew(t, s, cs, owned)
	for r := 1; r <= 2; r++ {
		roundWait(s, ctx, t0.Add(time.Duration(100*r)*time.Second))
		if len(fc.evicted) > 0 || len(fc.binds) > 0 {
			t.Fatalf("round %d: evicted %v, bound %v; want nothing (the budget allows one of old's two pods)", r, fc.evicted, keys(fc.binds))
		}
	}
	if want := "left on n0 GPUs 0,1,2,3, never moved or preempted while its disruption budgets refuse its eviction: its pods ns/old-0, ns/old-1 are covered by PodDisruptionBudget ns/old-budget, which allows 1 disruption now, and the Eviction API would refuse 1 of them"; !strings.Contains(log.String(), want) {
		t.Errorf("the log does not say why old stays (%q):\n%s", want, log.String())
	}
	if want := "0 GPUs free; 4 GPUs are held by gangs it may not evict: gang ns/old (a disruption budget)"; !strings.Contains(log.String(), want) {
		t.Errorf("new's wait does not name the gang that holds its GPUs (%q):\n%s", want, log.String())
	}
	budget = budget.DeepCopy()
	budget.Status.DisruptionsAllowed = 2
	if _, err := cs.PolicyV1().PodDisruptionBudgets("ns").UpdateStatus(ctx, budget, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for s.budgets.blocks([]*corev1.Pod{old("old-0", "0,1"), old("old-1", "2,3")}) != "" {
		if time.Now().After(deadline) {
			t.Fatal("the budget's update never reached the scheduler")
		}
		time.Sleep(5 * time.Millisecond)
	}
	roundWait(s, ctx, t0.Add(300*time.Second))
	if !slices.Equal(slices.Sorted(slices.Values(fc.evicted)), []string{"old-0", "old-1"}) {
		t.Errorf("budget allows two: evicted %v, want old-0 and old-1", fc.evicted)
	}
}

// A replica that may not list PodDisruptionBudgets says so and schedules
// on (an informer it cannot list would never sync, and no round would
// run).
func TestBudgetsForbiddenStillSchedules(t *testing.T) {
	cs, fc := newFake(t, node("n0", 4), owned(pod("a-0", 2, gangAnn("a", 1), "")))
	cs.PrependReactor("list", "poddisruptionbudgets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(schema.GroupResource{Group: "policy", Resource: "poddisruptionbudgets"}, "", errors.New("RBAC: no"))
	})
	s, log := startLogged(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	if fc.binds["a-0"] == nil {
		t.Errorf("a-0 not bound, want it bound: the budgets unread must not stop the rounds")
	}
	if !strings.Contains(log.String(), "PodDisruptionBudgets not readable") {
		t.Errorf("the log does not say the budgets are not read:\n%s", log.String())
	}
}
