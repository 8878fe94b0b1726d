package kube

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// An eviction the API server refuses (a 4xx: a disruption budget this
// replica cannot read, an admission webhook, RBAC without
// pods/eviction) leaves the pod running, and the next round, poked by
// the refusal, would plan the same eviction and be refused again: an
// eviction and a warning every round, for as long as the refusal holds.
// So a refused pod's gang is kept where it runs, as one a budget keeps,
// until a backoff ends (refuseFirst, doubled at each refusal in a row
// up to refuseMax, as kube-scheduler backs off a pod that does not
// fit); then the rounds may try it again. An eviction that lands
// forgets the pod.
const (
	refuseFirst = 10 * time.Second
	refuseMax   = 5 * time.Minute
)

// refusedEvictions remembers, by pod UID, the evictions the API server
// refused. The binder's goroutines write it, the round reads it.
type refusedEvictions struct {
	mu sync.Mutex
	by map[types.UID]refusal
	// n is len(by): every round asks of every running gang, and almost
	// always nothing was refused, which n says without the lock.
	n atomic.Int32
}

// refusal is one pod's refused evictions in a row: the last one's time
// and error, and the end of its backoff.
type refusal struct {
	pod   string // namespace/name
	at    time.Time
	until time.Time
	tries int
	err   string
}

// note records that the API server refused to evict p at now with err,
// and returns the end of p's backoff.
func (r *refusedEvictions) note(p *corev1.Pod, err error, now time.Time) time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.by == nil {
		r.by = map[types.UID]refusal{}
	}
	old, ok := r.by[p.UID]
	if ok && now.Sub(old.until) > refuseMax {
		// Quiet for longer than the longest backoff: a new start.
		ok = false
	}
	x := refusal{pod: p.Namespace + "/" + p.Name, at: now, tries: 1}
	if ok {
		x.tries = old.tries + 1
	}
	wait := refuseFirst
	for i := 1; i < x.tries && wait < refuseMax; i++ {
		wait *= 2
	}
	x.until = now.Add(min(wait, refuseMax))
	if err != nil {
		x.err = err.Error()
	}
	r.by[p.UID] = x
	// Pods that left while refused are dropped here, not tracked: an
	// entry long past its backoff is a new start anyway.
	for uid, y := range r.by {
		if now.Sub(y.until) > refuseMax {
			delete(r.by, uid)
		}
	}
	r.n.Store(int32(len(r.by)))
	return x.until
}

// forget drops p's refusals: its eviction landed.
func (r *refusedEvictions) forget(p *corev1.Pod) {
	if r.n.Load() == 0 {
		return
	}
	r.mu.Lock()
	delete(r.by, p.UID)
	r.n.Store(int32(len(r.by)))
	r.mu.Unlock()
}

// blocks says why a gang of these bound pods is kept at now, or "": the
// API server refused to evict one of them and its backoff has not ended.
// The pods whose backoffs run are named, with the latest refusal's
// error, so an operator sees what refuses (budgets this replica cannot
// read, a webhook, missing RBAC).
func (r *refusedEvictions) blocks(pods []*corev1.Pod, now time.Time) string {
	if r.n.Load() == 0 {
		return ""
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var names []string
	var last refusal
	for _, p := range pods {
		x, ok := r.by[p.UID]
		if !ok || !now.Before(x.until) {
			continue
		}
		names = append(names, x.pod)
		if x.until.After(last.until) {
			last = x
		}
	}
	if len(names) == 0 {
		return ""
	}
	slices.Sort(names)
	what := "its pod " + names[0]
	if len(names) > 1 {
		what = "its pods " + strings.Join(names, ", ")
	}
	return fmt.Sprintf("the API server refused to evict %s (last at %s, %s in a row: %s); not tried again before %s",
		what, last.at.UTC().Format(time.RFC3339), plural(last.tries, "time"), last.err, last.until.UTC().Format(time.RFC3339))
}
