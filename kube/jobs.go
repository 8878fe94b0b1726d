package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// A batch/v1 Job recreates the pods an eviction deletes, but by default
// it counts each one as a failed pod, and a Job with more failed pods
// than its backoffLimit (6 unless set) fails for good: its work is lost
// as a bare pod's is. A scheduler that migrates, as PAL does, could
// spend that budget in a few rounds. So a Job's gang is moved only while
// the Job survives it: its podFailurePolicy ignores the DisruptionTarget
// condition the eviction sets, or its failed pods plus the ones the
// eviction fails stay within backoffLimit (within backoffLimitPerIndex
// for each index of a Job that sets it). An earlier onExitCodes rule
// can take precedence over the DisruptionTarget one; the container of an
// evicted pod is taken to end with 143 (SIGTERM) or 137 (SIGKILL after
// the grace period), so a rule that fails the Job or the index on either
// code, or on any code outside a set without them, makes the move fatal.

// A round asks this of every running gang, tens of thousands at 5,000
// nodes, so the Job informer keeps the set of Jobs a gang's eviction
// might fail (tightJobs): those whose policy fails them on an eviction
// or counts per index, and those with less budget left than pods
// running. A gang none of whose Jobs is in it loses nothing; for the
// rest jobsAtRisk reads the Job and decides exactly. (A Job that the
// informer has not shown yet counts as roomy: its gang was bound by an
// earlier round, and the Job was created before its pods.)

// tightJobs is the set of Jobs whose eviction budget is short (see
// above), by UID, kept by the Job informer's handler. A round reads it
// once per running gang, so reads take no lock: an update writes a new
// map (the set holds only the tight Jobs, and Jobs change far less often
// than rounds read).
type tightJobs struct {
	mu  sync.Mutex // serialises writers
	set atomic.Pointer[map[types.UID]bool]
}

// handler keeps the set as the Job informer sees Jobs.
func (t *tightJobs) handler() cache.ResourceEventHandler {
	job := func(obj any) *batchv1.Job {
		j, _ := tombstoned(obj).(*batchv1.Job)
		return j
	}
	note := func(obj any) {
		if j := job(obj); j != nil {
			t.put(j.UID, tight(j))
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: note, UpdateFunc: func(_, obj any) { note(obj) }, DeleteFunc: func(obj any) {
		if j := job(obj); j != nil {
			t.put(j.UID, false)
		}
	}}
}

func (t *tightJobs) put(uid types.UID, in bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var old map[types.UID]bool
	if p := t.set.Load(); p != nil {
		old = *p
	}
	if old[uid] == in {
		return
	}
	m := make(map[types.UID]bool, len(old)+1)
	for k := range old {
		m[k] = true
	}
	if in {
		m[uid] = true
	} else {
		delete(m, uid)
	}
	t.set.Store(&m)
}

// holds reports whether a Job in the set owns one of pods.
func (t *tightJobs) holds(pods []*corev1.Pod) bool {
	p := t.set.Load()
	if p == nil || len(*p) == 0 {
		return false
	}
	for _, pod := range pods {
		if ref := metav1.GetControllerOfNoCopy(pod); ref != nil && (*p)[ref.UID] {
			return true
		}
	}
	return false
}

// len is the set's size.
func (t *tightJobs) len() int {
	if p := t.set.Load(); p != nil {
		return len(*p)
	}
	return 0
}

// tight reports whether evicting some of Job j's pods might fail it:
// evictionFails for as many pods as it may run (its parallelism, or more
// when more are active), or for one pod of an index near its limit.
func tight(j *batchv1.Job) bool {
	n := 1
	if p := j.Spec.Parallelism; p != nil {
		n = max(n, int(*p))
	}
	n = max(n, int(j.Status.Active))
	if j.Spec.BackoffLimitPerIndex != nil {
		return true // the budget is each pod's index's: read per pod
	}
	return evictionFailsN(j, n, nil) != ""
}

// evictedExitCodes are the exit codes an evicted pod's container is
// taken to end with (see above).
var evictedExitCodes = []int32{137, 143}

// jobsAtRisk names each batch/v1 Job that evicting pods would fail, with
// why, or returns nil when none would. A Job the scheduler's cache does
// not hold (or holds under another UID) counts as at risk: nothing says
// what its policy allows.
func (s *Scheduler) jobsAtRisk(pods []*corev1.Pod) []string {
	type owned struct {
		ref  metav1.OwnerReference
		pods []*corev1.Pod
	}
	var jobs []*owned
	for _, p := range pods {
		ref := metav1.GetControllerOfNoCopy(p)
		if ref == nil || ref.Kind != "Job" || !strings.HasPrefix(ref.APIVersion, "batch/") {
			continue
		}
		i := slices.IndexFunc(jobs, func(o *owned) bool { return o.ref.UID == ref.UID })
		if i < 0 {
			jobs = append(jobs, &owned{ref: *ref})
			i = len(jobs) - 1
		}
		jobs[i].pods = append(jobs[i].pods, p)
	}
	var out []string
	for _, o := range jobs {
		name := "Job " + o.pods[0].Namespace + "/" + o.ref.Name
		var why string
		if s.batchJobs == nil {
			why = "the scheduler cannot read Jobs"
		} else if j, err := s.batchJobs.Jobs(o.pods[0].Namespace).Get(o.ref.Name); err != nil || j.UID != o.ref.UID {
			why = "it is not in the scheduler's cache, so what its policy allows is unknown"
		} else {
			why = evictionFails(j, o.pods)
		}
		if why != "" {
			out = append(out, name+" would fail: "+why)
		}
	}
	return out
}

// evictionFails says why evicting pods (all of Job j's) would fail j or
// one of its indexes, or "" when j survives it (see above).
func evictionFails(j *batchv1.Job, pods []*corev1.Pod) string {
	return evictionFailsN(j, len(pods), pods)
}

// evictionFailsN is evictionFails for n pods, of which pods (read only
// under backoffLimitPerIndex) are named.
func evictionFailsN(j *batchv1.Job, n int, pods []*corev1.Pod) string {
	if pf := j.Spec.PodFailurePolicy; pf != nil {
		// The Job controller applies the first rule that matches.
	rules:
		for i, r := range pf.Rules {
			if matchesDisruption(r) {
				switch r.Action {
				case batchv1.PodFailurePolicyActionIgnore:
					return ""
				case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionFailIndex:
					return fmt.Sprintf("its podFailurePolicy rule %d is %s on DisruptionTarget, the condition an eviction sets", i+1, r.Action)
				case batchv1.PodFailurePolicyActionCount:
					break rules
				}
				continue // the Job controller skips an action it does not know
			}
			if e := r.OnExitCodes; e != nil && exitCodesMatch(e) {
				switch r.Action {
				case batchv1.PodFailurePolicyActionFailJob, batchv1.PodFailurePolicyActionFailIndex:
					return fmt.Sprintf("its podFailurePolicy rule %d is %s on an exit code an evicted container may end with (137 or 143), ahead of any rule that ignores DisruptionTarget", i+1, r.Action)
				case batchv1.PodFailurePolicyActionCount:
					break rules
				}
				// Ignore: it may not match the code the container ends
				// with, so the rules after it still decide.
			}
		}
	}
	if l := j.Spec.BackoffLimitPerIndex; l != nil {
		for _, p := range pods {
			n, _ := strconv.Atoi(p.Annotations[batchv1.JobIndexFailureCountAnnotation])
			if n+1 > int(*l) {
				return fmt.Sprintf("pod %s's index has failed %d times of backoffLimitPerIndex %d; an eviction counts one more (a podFailurePolicy rule Ignore on DisruptionTarget would not)",
					p.Name, n, *l)
			}
		}
		return ""
	}
	limit := int32(6) // the Job API's default
	if j.Spec.BackoffLimit != nil {
		limit = *j.Spec.BackoffLimit
	}
	if int(j.Status.Failed)+n > int(limit) {
		return fmt.Sprintf("it has %d failed pods of backoffLimit %d, and the eviction fails %d more (a podFailurePolicy rule Ignore on DisruptionTarget would not count them)",
			j.Status.Failed, limit, n)
	}
	return ""
}

// matchesDisruption reports whether rule r matches a pod the Eviction
// API evicted: one of its patterns is DisruptionTarget with status True
// (the default when unset).
func matchesDisruption(r batchv1.PodFailurePolicyRule) bool {
	for _, c := range r.OnPodConditions {
		if c.Type == corev1.DisruptionTarget && (c.Status == "" || c.Status == corev1.ConditionTrue) {
			return true
		}
	}
	return false
}

// exitCodesMatch reports whether requirement e may match an evicted
// container's exit code (evictedExitCodes); an operator the Job
// controller does not know matches nothing, as it treats it.
func exitCodesMatch(e *batchv1.PodFailurePolicyOnExitCodesRequirement) bool {
	for _, c := range evictedExitCodes {
		in := slices.Contains(e.Values, c)
		switch e.Operator {
		case batchv1.PodFailurePolicyOnExitCodesOpIn:
			if in {
				return true
			}
		case batchv1.PodFailurePolicyOnExitCodesOpNotIn:
			if !in {
				return true
			}
		}
	}
	return false
}
