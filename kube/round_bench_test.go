package kube

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// roundShape is a benchmark cluster: nodes x per GPUs, every GPU held by
// one running one-GPU pod of ours (a Job's, so the round may move it),
// and pending one-GPU pods that wait for room.
type roundShape struct{ nodes, per, pending int }

// benchRoundShapes: the acceptance shape (5,000 nodes x 8 GPUs, 40,000
// running pods, 2,000 pending) and a small one.
var benchRoundShapes = []roundShape{{100, 8, 40}, {5000, 8, 2000}}

// benchCluster builds the shape's objects as the apiserver would hold
// them: bound pods carry their indices and bind-info, as PAL wrote them,
// and each pod has its own batch/v1 Job.
func benchCluster(sh roundShape) []runtime.Object {
	var objs []runtime.Object
	yes := true
	created := metav1.NewTime(time.Unix(1_700_000_000, 0))
	one := int32(1)
	mk := func(name, nodeName string, idx int, at metav1.Time) *corev1.Pod {
		// Its Job: a round reads it to know whether the gang may be
		// evicted (its failed pods against backoffLimit).
		objs = append(objs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: name, UID: k8stypes.UID("uid-job-" + name)},
			Spec: batchv1.JobSpec{Parallelism: &one}})
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: name, UID: k8stypes.UID("uid-" + name),
				CreationTimestamp: at, ResourceVersion: "1",
				Labels: map[string]string{"app": "train", "batch.kubernetes.io/job-name": name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name,
					UID: k8stypes.UID("uid-job-" + name), Controller: &yes}},
				Annotations: map[string]string{AnnModel: "resnet50"}},
			Spec: corev1.PodSpec{SchedulerName: "pal", NodeName: nodeName, Containers: []corev1.Container{{Name: "train", Image: "train:latest",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: GPUQuantity(1)}}}}},
		}
		if nodeName != "" {
			p.Status.Phase = corev1.PodRunning
			p.Annotations[AnnGPUIndices] = FormatIndices([]int{idx})
			p.Annotations[AnnBindInfo] = mustJSON(BindInfo{Gang: "train/pod:" + name, Round: "2026-01-01T00:00:00Z",
				Pods: map[string]PodBind{name: {Node: nodeName, GPUs: []int{idx}}}})
			p.Annotations[AnnSlowdown] = "1"
		} else {
			p.Status.Phase = corev1.PodPending
		}
		return p
	}
	for n := range sh.nodes {
		name := fmt.Sprintf("gpu-%05d", n)
		objs = append(objs, node(name, sh.per))
		for i := range sh.per {
			objs = append(objs, mk(fmt.Sprintf("run-%05d-%d", n, i), name, i, created))
		}
	}
	later := metav1.NewTime(created.Add(time.Hour))
	for i := range sh.pending {
		objs = append(objs, mk(fmt.Sprintf("wait-%05d", i), "", 0, later))
	}
	return objs
}

// BenchmarkSchedulerRound times one steady round of pal-kube scheduler: the
// informers hold the shape's cluster, an earlier round has run, and
// nothing changed since but the clock (a period of 10 s). Every GPU is
// held, so the pending pods wait and nothing is bound: the round's cost is
// reading the state, ordering, placing and deciding to do nothing.
//
//	go test ./kube -run '^$' -bench 'BenchmarkSchedulerRound/5000x8' -count 6
func BenchmarkSchedulerRound(b *testing.B) {
	for _, sh := range benchRoundShapes {
		b.Run(fmt.Sprintf("%dx%d", sh.nodes, sh.per), func(b *testing.B) {
			round := steadyRounds(b, sh)
			b.ReportAllocs()
			b.ResetTimer()
			for i := range b.N {
				round(i)
			}
		})
	}
}

// steadyRounds starts a scheduler on the shape's cluster and runs its
// first two rounds (the first builds everything from the pods); round(i)
// then runs the next, 10 s on: a full cluster where nothing changes.
func steadyRounds(tb testing.TB, sh roundShape) (round func(i int)) {
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	round, _ = roundsOn(tb, cfg, benchCluster(sh))
	return round
}

// roundsOn starts a scheduler under cfg on the objects, with its
// informers synced, and runs its first two rounds; round(i) then runs
// the next, 10 s on.
func roundsOn(tb testing.TB, cfg Config, objs []runtime.Object) (round func(i int), s *Scheduler) {
	tb.Helper()
	s, err := New(cfg, fake.NewClientset(objs...), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	tb.Cleanup(cancel)
	s.startFactories(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), s.synced...) {
		tb.Fatal("informers did not sync")
	}
	at := time.Unix(1_700_010_000, 0)
	s.Round(ctx, at)
	s.Round(ctx, at.Add(10*time.Second))
	return func(i int) { s.Round(ctx, at.Add(time.Duration(i+2)*10*time.Second)) }, s
}

// A steady round allocates a bounded handful, whatever the cluster's
// size: per-gang work that allocates (parsing a pod's annotations each
// round, say) shows here as thousands. This counts allocations, not
// time, so it holds on a loaded machine; BenchmarkSchedulerRound has the
// figures (18 a round at both shapes when this was written).
func TestSteadyRoundAllocs(t *testing.T) {
	round := steadyRounds(t, benchRoundShapes[0])
	i := 0
	if a := testing.AllocsPerRun(10, func() { round(i); i++ }); a > 40 {
		t.Errorf("a steady round at %dx%d allocates %.0f times, want at most 40", benchRoundShapes[0].nodes, benchRoundShapes[0].per, a)
	}
}
