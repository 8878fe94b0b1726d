package kube

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"
)

// PAL evicts through the Eviction API, which honours PodDisruptionBudgets
// pod by pod: it refuses (429) a pod whose budget allows no more
// disruptions, and evicts the gang's others. A preemption or migration of
// a gang some of whose pods a budget protects left the gang half evicted:
// its training broken, its evicted pods made again by their controller,
// the protected ones holding their GPUs. So a gang whose eviction a
// budget would refuse, in whole or in part, is not evicted: it stays where
// it runs, as a gang whose eviction would lose work does, and says why,
// until its budgets allow all its pods at once. (kube-scheduler's own
// preemption deletes its victims and only prefers those it can take
// without breaking a budget; PAL, evicting whole gangs through the API
// that enforces budgets, must read them first.)

// budgets holds the cluster's PodDisruptionBudgets by namespace, kept by
// their informer's handler. A round asks it of every running gang, so
// reads take no lock: an update writes a new map (budgets change far
// less often than rounds read them). A gang a budget keeps is out of the
// round's order, so a budget that starts to allow its eviction changes
// the order, and the planner runs (the handler wakes a round).
type budgets struct {
	mu  sync.Mutex // serialises writers
	set atomic.Pointer[map[string][]budget]
}

// budget is a PodDisruptionBudget and its selector, parsed once (nil: it
// covers no pod: no selector, or one the disruption controller cannot
// read either).
type budget struct {
	pdb *policyv1.PodDisruptionBudget
	sel labels.Selector
}

// handler keeps the set as the informer sees budgets.
func (b *budgets) handler() cache.ResourceEventHandler {
	pdb := func(obj any) *policyv1.PodDisruptionBudget {
		p, _ := tombstoned(obj).(*policyv1.PodDisruptionBudget)
		return p
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { b.put(pdb(obj), false) },
		UpdateFunc: func(_, obj any) { b.put(pdb(obj), false) },
		DeleteFunc: func(obj any) { b.put(pdb(obj), true) },
	}
}

// put adds, replaces or (gone) removes budget p.
func (b *budgets) put(p *policyv1.PodDisruptionBudget, gone bool) {
	if p == nil {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	var old map[string][]budget
	if cur := b.set.Load(); cur != nil {
		old = *cur
	}
	m := make(map[string][]budget, len(old)+1)
	for ns, l := range old {
		m[ns] = l
	}
	l := slices.DeleteFunc(slices.Clone(m[p.Namespace]), func(q budget) bool { return q.pdb.Name == p.Name })
	if !gone {
		l = append(l, budget{p, selectorOf(p)})
		slices.SortFunc(l, func(x, y budget) int { return strings.Compare(x.pdb.Name, y.pdb.Name) })
	}
	if len(l) == 0 {
		delete(m, p.Namespace)
	} else {
		m[p.Namespace] = l
	}
	b.set.Store(&m)
}

// selectorOf is budget p's selector: nil for none, which covers no pod
// (an empty one covers every pod of its namespace, policy/v1), or for one
// that does not parse (the disruption controller cannot read it either).
func selectorOf(p *policyv1.PodDisruptionBudget) labels.Selector {
	if p.Spec.Selector == nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(p.Spec.Selector)
	if err != nil {
		return nil
	}
	return sel
}

// blocks says why the Eviction API would refuse some of pods (a gang's
// bound pods), or "" when their budgets allow every one of them at once.
func (b *budgets) blocks(pods []*corev1.Pod) string {
	cur := b.set.Load()
	if cur == nil || len(*cur) == 0 || len(pods) == 0 {
		return ""
	}
	return budgetBlocks(pods, *cur)
}

// budgetBlocks is blocks on the budgets byNS, read as the Eviction API
// reads them: a pod that is not running (pending, or ended), or being
// deleted, is evicted without its budget; a pod matched by more than one
// budget is refused; an unready pod is evicted without spending the
// budget when the budget's unhealthyPodEvictionPolicy is AlwaysAllow, or
// when it is IfHealthyBudget (the default) and the budget has its
// desired healthy pods; every other pod spends one of its budget's
// disruptionsAllowed, and a budget whose status is older than its spec
// allows none.
func budgetBlocks(pods []*corev1.Pod, byNS map[string][]budget) string {
	need := map[*policyv1.PodDisruptionBudget][]string{}
	var order []*policyv1.PodDisruptionBudget
	for _, p := range pods {
		list := byNS[p.Namespace]
		if len(list) == 0 || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			continue
		}
		var match []*policyv1.PodDisruptionBudget
		for _, b := range list {
			if b.sel != nil && b.sel.Matches(labels.Set(p.Labels)) {
				match = append(match, b.pdb)
			}
		}
		switch {
		case len(match) == 0:
			continue
		case len(match) > 1:
			names := make([]string, len(match))
			for i, m := range match {
				names[i] = m.Namespace + "/" + m.Name
			}
			return fmt.Sprintf("pod %s/%s is covered by more than one PodDisruptionBudget (%s), and the Eviction API refuses such a pod", p.Namespace, p.Name, strings.Join(names, ", "))
		}
		pdb := match[0]
		if !podReady(p) {
			pol := pdb.Spec.UnhealthyPodEvictionPolicy
			if pol != nil && *pol == policyv1.AlwaysAllow ||
				pdb.Status.DesiredHealthy > 0 && pdb.Status.CurrentHealthy >= pdb.Status.DesiredHealthy {
				continue
			}
		}
		if _, ok := need[pdb]; !ok {
			order = append(order, pdb)
		}
		need[pdb] = append(need[pdb], p.Namespace+"/"+p.Name)
	}
	for _, pdb := range order {
		names := need[pdb]
		covered := fmt.Sprintf("its pod %s is covered by PodDisruptionBudget %s/%s", names[0], pdb.Namespace, pdb.Name)
		if len(names) > 1 {
			covered = fmt.Sprintf("its pods %s are covered by PodDisruptionBudget %s/%s", strings.Join(names, ", "), pdb.Namespace, pdb.Name)
		}
		if c := syncFailed(pdb); c != nil {
			// It never catches up: the controller cannot count the
			// pods a maxUnavailable or a percentage is of (a Job has no
			// scale subresource, a bare pod no controller).
			return fmt.Sprintf("%s, which the disruption controller cannot compute (%s: %s), so the Eviction API refuses them; an integer minAvailable needs no controller's scale",
				covered, c.Reason, strings.TrimSpace(c.Message))
		}
		if pdb.Status.ObservedGeneration < pdb.Generation {
			return covered + ", whose status the disruption controller has not caught up with yet, and the Eviction API refuses them meanwhile"
		}
		if allowed := max(int(pdb.Status.DisruptionsAllowed), 0); len(names) > allowed {
			return fmt.Sprintf("%s, which allows %s now, and the Eviction API would refuse %d of them", covered, plural(allowed, "disruption"), len(names)-allowed)
		}
	}
	return ""
}

// syncFailed is budget pdb's DisruptionAllowed condition when the
// disruption controller failed to compute it (reason SyncFailed), or nil.
func syncFailed(pdb *policyv1.PodDisruptionBudget) *metav1.Condition {
	for i, c := range pdb.Status.Conditions {
		if c.Type == policyv1.DisruptionAllowedCondition && c.Status == metav1.ConditionFalse && c.Reason == policyv1.SyncFailedReason {
			return &pdb.Status.Conditions[i]
		}
	}
	return nil
}

// plural is n and noun, with an s unless n is 1.
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// podReady reports whether pod p's Ready condition is true.
func podReady(p *corev1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// setupBudgets watches the PodDisruptionBudgets unless this replica may
// not list them (deploy/rbac.yaml grants it) or the apiserver does not
// serve policy/v1 ones: then it says so once and the rounds evict as
// before. An informer that can never list would never sync, and no round
// would run; any other failure is the apiserver's, which the informer
// retries (and /readyz names).
func (s *Scheduler) setupBudgets() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	_, err := s.client.PolicyV1().PodDisruptionBudgets("").List(ctx, metav1.ListOptions{Limit: 1})
	if apierrors.IsForbidden(err) || apierrors.IsNotFound(err) {
		s.log.Warn("PodDisruptionBudgets not readable: a gang whose eviction a budget refuses may be evicted in part; "+
			"grant get, list and watch on policy poddisruptionbudgets (deploy/rbac.yaml), then restart", "err", err)
		return
	}
	bi := s.factory.Policy().V1().PodDisruptionBudgets()
	inf := bi.Informer()
	_ = inf.SetTransform(dropManagedFields)
	_ = inf.SetWatchErrorHandlerWithContext(s.api.watchHandler("poddisruptionbudgets"))
	s.synced = append(s.synced, inf.HasSynced)
	if reg, err := inf.AddEventHandler(s.budgets.handler()); err == nil {
		s.synced = append(s.synced, reg.HasSynced)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{UpdateFunc: func(any, any) { s.poke() }, DeleteFunc: func(any) { s.poke() }})
}
