package kube

import (
	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/workload"
)

type jobGang = podspec.JobLookup

// readPod reads one pod as the state does.
func readPod(p *corev1.Pod, models *workload.Models, job jobGang, groups ...podspec.GroupSource) (podspec.Spec, error) {
	return (&podspec.Reader{Models: models, Job: job, Groups: groups}).Read(p)
}

// buildSnapshot is the state a Store holds for these objects, as a
// round's snapshot.
func buildSnapshot(nodes []*corev1.Node, ours, foreign []*corev1.Pod, models *workload.Models, job jobGang, groups ...podspec.GroupSource) (*snapshot, error) {
	st := state.New(state.Config{SchedulerName: "pal", Reader: &podspec.Reader{Models: models, Job: job, Groups: groups}})
	for _, n := range nodes {
		st.OnNode(n)
	}
	for _, p := range ours {
		st.OnPod(p)
	}
	for _, p := range foreign {
		st.OnBoundPod(p)
	}
	st.Sync()
	return st.Snapshot(), nil
}
