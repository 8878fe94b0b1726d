package kube

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/cache"
)

// evictionFails follows the Job controller: the first podFailurePolicy
// rule that matches an evicted pod decides, an unknown action is
// skipped, an evicted container is taken to exit 137 or 143, and what is
// counted must stay within backoffLimit (6 unless set) or, per index,
// backoffLimitPerIndex.
func TestEvictionFails(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	dt := func(a batchv1.PodFailurePolicyAction, status corev1.ConditionStatus) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: a, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: status}}}
	}
	codes := func(a batchv1.PodFailurePolicyAction, op batchv1.PodFailurePolicyOnExitCodesOperator, v ...int32) batchv1.PodFailurePolicyRule {
		return batchv1.PodFailurePolicyRule{Action: a, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: op, Values: v}}
	}
	const (
		ignore  = batchv1.PodFailurePolicyActionIgnore
		count   = batchv1.PodFailurePolicyActionCount
		failJob = batchv1.PodFailurePolicyActionFailJob
		failIdx = batchv1.PodFailurePolicyActionFailIndex
		in      = batchv1.PodFailurePolicyOnExitCodesOpIn
		notIn   = batchv1.PodFailurePolicyOnExitCodesOpNotIn
	)
	pods := func(n int, failures ...string) []*corev1.Pod {
		var ps []*corev1.Pod
		for i := range n {
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "w-" + itoa(i), Annotations: map[string]string{}}}
			if i < len(failures) {
				p.Annotations[batchv1.JobIndexFailureCountAnnotation] = failures[i]
			}
			ps = append(ps, p)
		}
		return ps
	}
	for _, tc := range []struct {
		name   string
		rules  []batchv1.PodFailurePolicyRule
		limit  *int32
		perIdx *int32
		failed int32
		pods   []*corev1.Pod
		fails  string // a part of the reason; "" when the Job survives
	}{
		{name: "no policy, 0 + 4 failed of the default 6", pods: pods(4)},
		{name: "no policy, 2 + 4 of 6: at the limit", failed: 2, pods: pods(4)},
		{name: "no policy, 3 + 4 of 6", failed: 3, pods: pods(4), fails: "it has 3 failed pods of backoffLimit 6, and the eviction fails 4 more"},
		{name: "backoffLimit 0, one pod", limit: i32(0), pods: pods(1), fails: "of backoffLimit 0"},
		{name: "backoffLimit 100", limit: i32(100), failed: 90, pods: pods(8)},
		{name: "Ignore on DisruptionTarget", rules: []batchv1.PodFailurePolicyRule{dt(ignore, "")}, limit: i32(0), failed: 50, pods: pods(8)},
		{name: "Ignore on DisruptionTarget=True", rules: []batchv1.PodFailurePolicyRule{dt(ignore, corev1.ConditionTrue)}, limit: i32(0), pods: pods(8)},
		{name: "Ignore on DisruptionTarget=False matches nothing", rules: []batchv1.PodFailurePolicyRule{dt(ignore, corev1.ConditionFalse)}, limit: i32(0), pods: pods(1), fails: "backoffLimit 0"},
		{name: "FailJob on DisruptionTarget", rules: []batchv1.PodFailurePolicyRule{dt(failJob, "")}, pods: pods(1), fails: "rule 1 is FailJob on DisruptionTarget"},
		{name: "FailIndex on DisruptionTarget", rules: []batchv1.PodFailurePolicyRule{dt(failIdx, "")}, pods: pods(1), fails: "rule 1 is FailIndex on DisruptionTarget"},
		{name: "Count on DisruptionTarget stops before a later Ignore", rules: []batchv1.PodFailurePolicyRule{dt(count, ""), dt(ignore, "")}, limit: i32(1), pods: pods(2), fails: "backoffLimit 1"},
		{name: "an unknown action is skipped", rules: []batchv1.PodFailurePolicyRule{dt("Retry", ""), dt(ignore, "")}, limit: i32(0), pods: pods(4)},
		{name: "FailJob on 42, then Ignore: an evicted container does not exit 42", rules: []batchv1.PodFailurePolicyRule{codes(failJob, in, 42), dt(ignore, "")}, limit: i32(0), pods: pods(4)},
		{name: "FailJob on 143 ahead of Ignore", rules: []batchv1.PodFailurePolicyRule{codes(failJob, in, 1, 143), dt(ignore, "")}, pods: pods(1), fails: "rule 1 is FailJob on an exit code"},
		{name: "FailIndex on codes not in {0, 1}", rules: []batchv1.PodFailurePolicyRule{codes(failIdx, notIn, 0, 1), dt(ignore, "")}, pods: pods(1), fails: "rule 1 is FailIndex on an exit code"},
		{name: "FailJob on codes not in {137, 143}", rules: []batchv1.PodFailurePolicyRule{codes(failJob, notIn, 137, 143), dt(ignore, "")}, limit: i32(0), pods: pods(1)},
		{name: "Count on 137 ahead of Ignore counts", rules: []batchv1.PodFailurePolicyRule{codes(count, in, 137), dt(ignore, "")}, limit: i32(0), pods: pods(1), fails: "backoffLimit 0"},
		{name: "Ignore on 143 leaves the rules after it to decide", rules: []batchv1.PodFailurePolicyRule{codes(ignore, in, 143), dt(failJob, "")}, pods: pods(1), fails: "rule 2 is FailJob"},
		{name: "FailJob after Ignore on DisruptionTarget is never reached", rules: []batchv1.PodFailurePolicyRule{dt(ignore, ""), codes(failJob, notIn, 0)}, pods: pods(1)},
		{name: "per index: 0 failures of 1", perIdx: i32(1), pods: pods(2, "0", "0")},
		{name: "per index: no annotation, limit 1", perIdx: i32(1), pods: pods(2)},
		{name: "per index: one index spent", perIdx: i32(2), failed: 100, pods: pods(2, "0", "2"), fails: "pod w-1's index has failed 2 times of backoffLimitPerIndex 2"},
		{name: "per index with Ignore", rules: []batchv1.PodFailurePolicyRule{dt(ignore, "")}, perIdx: i32(0), pods: pods(2, "5", "5")},
	} {
		j := &batchv1.Job{Spec: batchv1.JobSpec{BackoffLimit: tc.limit, BackoffLimitPerIndex: tc.perIdx}, Status: batchv1.JobStatus{Failed: tc.failed}}
		if tc.rules != nil {
			j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: tc.rules}
		}
		got := evictionFails(j, tc.pods)
		if tc.fails == "" && got != "" || tc.fails != "" && !strings.Contains(got, tc.fails) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.fails)
		}
	}
}

// A Job is in the tight set when evicting as many of its pods as it may
// run (its parallelism, or its active pods when more) might fail it, and
// the set names a gang's Job by the UID of its pods' controller.
func TestTightJobs(t *testing.T) {
	i32 := func(v int32) *int32 { return &v }
	ignore := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{Action: batchv1.PodFailurePolicyActionIgnore,
		OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget}}}}}
	for _, tc := range []struct {
		name  string
		spec  batchv1.JobSpec
		st    batchv1.JobStatus
		tight bool
	}{
		{name: "parallelism unset: one pod of 6", spec: batchv1.JobSpec{}},
		{name: "4 pods of 6", spec: batchv1.JobSpec{Parallelism: i32(4)}},
		{name: "4 pods, 3 failed, of 6", spec: batchv1.JobSpec{Parallelism: i32(4)}, st: batchv1.JobStatus{Failed: 3}, tight: true},
		{name: "8 pods of 6", spec: batchv1.JobSpec{Parallelism: i32(8)}, tight: true},
		{name: "4 of parallelism, 10 active", spec: batchv1.JobSpec{Parallelism: i32(4)}, st: batchv1.JobStatus{Active: 10}, tight: true},
		{name: "100 pods ignoring DisruptionTarget", spec: batchv1.JobSpec{Parallelism: i32(100), BackoffLimit: i32(0), PodFailurePolicy: ignore}},
		{name: "per index", spec: batchv1.JobSpec{BackoffLimitPerIndex: i32(100)}, tight: true},
	} {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: "u"}, Spec: tc.spec, Status: tc.st}
		if got := tight(j); got != tc.tight {
			t.Errorf("%s: tight %v, want %v", tc.name, got, tc.tight)
		}
	}
	yes := true
	owned := func(uid string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{
			{APIVersion: "batch/v1", Kind: "Job", Name: "j", UID: types.UID(uid), Controller: &yes}}}}
	}
	var set tightJobs
	h := set.handler()
	wide := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: "wide"}, Spec: batchv1.JobSpec{Parallelism: i32(8)}}
	h.OnAdd(wide, false)
	h.OnAdd(&batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: "small"}}, false)
	bare := &corev1.Pod{}
	if !set.holds([]*corev1.Pod{bare, owned("small"), owned("wide")}) || set.holds([]*corev1.Pod{bare, owned("small")}) {
		t.Errorf("holds: want the 8-pod Job alone, set of %d", set.len())
	}
	roomy := wide.DeepCopy()
	roomy.Spec.PodFailurePolicy = ignore
	h.OnUpdate(wide, roomy)
	if set.holds([]*corev1.Pod{owned("wide")}) {
		t.Error("a Job updated to ignore DisruptionTarget is still tight")
	}
	h.OnUpdate(roomy, wide)
	h.OnDelete(cache.DeletedFinalStateUnknown{Key: "ns/wide", Obj: wide})
	if set.len() != 0 {
		t.Errorf("after the delete: %d Jobs", set.len())
	}
}
