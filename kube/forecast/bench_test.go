package forecast

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/palsched/pal/kube"
)

// benchCluster is kube's BenchmarkSchedulerRound shape (nodes x per
// GPUs, every GPU held by a running one-GPU pod of a Job, pending
// one-GPU pods) with stated work, all bound at the forecast's time:
// running pod i has 10 x (1 + i mod 360) s of resnet50 iterations left,
// pending pod i 600 x (1 + i mod 10) s, so the running ones end over an
// hour of rounds, the pending ones start as they do and run up to 100
// minutes (about 1,000 rounds of 10 s forward).
func benchCluster(nodes, per, pending int) []runtime.Object {
	var objs []runtime.Object
	yes := true
	created := metav1.NewTime(time.Unix(1_700_000_000, 0))
	const resnet50 = 0.17540429367763434 // s per iteration (the model table's)
	iters := func(sec int) int { return int(float64(sec)/resnet50) + 1 }
	mk := func(name, nodeName string, idx int, iters int, at metav1.Time) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: name, UID: k8stypes.UID("uid-" + name),
				CreationTimestamp: at, ResourceVersion: "1",
				Labels: map[string]string{"app": "train", "batch.kubernetes.io/job-name": name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name,
					UID: k8stypes.UID("uid-job-" + name), Controller: &yes}},
				Annotations: map[string]string{kube.AnnModel: "resnet50", kube.AnnIterations: strconv.Itoa(iters)}},
			Spec: corev1.PodSpec{SchedulerName: "pal", NodeName: nodeName, Containers: []corev1.Container{{Name: "train", Image: "train:latest",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(1)}}}}},
		}
		if nodeName != "" {
			p.Status.Phase = corev1.PodRunning
			p.Annotations[kube.AnnGPUIndices] = kube.FormatIndices([]int{idx})
			p.Annotations[kube.AnnBindInfo] = fmt.Sprintf(`{"gang":"train/pod:%s","round":"2023-11-15T01:00:00Z","pods":{"%s":{"node":"%s","gpus":[%d]}}}`, name, name, nodeName, idx)
			p.Annotations[kube.AnnSlowdown] = "1"
		} else {
			p.Status.Phase = corev1.PodPending
		}
		return p
	}
	k := 0
	for n := range nodes {
		name := fmt.Sprintf("gpu-%05d", n)
		objs = append(objs, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name},
			Status: corev1.NodeStatus{Allocatable: corev1.ResourceList{kube.ResourceGPU: kube.GPUQuantity(per)}}})
		for i := range per {
			objs = append(objs, mk(fmt.Sprintf("run-%05d-%d", n, i), name, i, iters(10*(1+k%360)), created))
			k++
		}
	}
	later := metav1.NewTime(created.Add(time.Hour))
	for i := range pending {
		objs = append(objs, mk(fmt.Sprintf("wait-%05d", i), "", 0, iters(600*(1+i%10)), later))
	}
	return objs
}

// BenchmarkForecast times one forecast (Run on the state of a round:
// building the simulator's state and running it forward until every
// pending gang has ended) on the round benchmark's shapes, the default
// config (FIFO, pal-ma, 10 s rounds).
//
//	go test ./kube/forecast -run '^$' -bench 'BenchmarkForecast/5000x8' -benchtime 3x
func BenchmarkForecast(b *testing.B) {
	for _, sh := range [][3]int{{100, 8, 40}, {5000, 8, 2000}} {
		b.Run(fmt.Sprintf("%dx%d", sh[0], sh[1]), func(b *testing.B) {
			cs := fake.NewClientset(benchCluster(sh[0], sh[1], sh[2])...)
			cfg := kube.DefaultConfig()
			cfg.LeaderElection.Enabled = false
			s, err := kube.New(cfg, cs, slog.New(slog.NewTextHandler(io.Discard, nil)))
			if err != nil {
				b.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if err := s.Read(ctx); err != nil {
				b.Fatal(err)
			}
			at := time.Unix(1_700_010_000, 0)
			st, err := s.Forecast(at)
			if err != nil {
				b.Fatal(err)
			}
			if len(st.Pending) != sh[2] {
				b.Fatalf("%d pending gangs, want %d", len(st.Pending), sh[2])
			}
			b.ReportAllocs()
			cpu0 := cpuTime()
			b.ResetTimer()
			defer func() {
				// CPU of the whole process (GC included) per forecast,
				// the target's measure; ns/op is wall time on a shared machine.
				b.ReportMetric(float64(cpuTime()-cpu0)/float64(time.Millisecond)/float64(b.N), "cpu-ms/op")
			}()
			for range b.N {
				rows, err := Run(st)
				if err != nil {
					b.Fatal(err)
				}
				if rows[len(rows)-1].Start < 0 {
					b.Fatal("the last gang never starts")
				}
			}
		})
	}
}

// cpuTime is the process's user and system CPU time so far.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
