package state

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/kube/podspec"
)

// An assumed eviction is dropped once the informer shows the pod gone
// its own way: being deleted, succeeded or failed (a pod that ended
// before the eviction landed is not evicted again, and the assumption
// does not linger). Still running, the assumption stands.
func TestAssumedEvictionEndsWithThePod(t *testing.T) {
	for _, c := range []struct {
		name  string
		end   func(p *corev1.Pod)
		still int
	}{
		{"running", func(p *corev1.Pod) { p.ResourceVersion = "2" }, 1},
		{"succeeded", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, 0},
		{"failed", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }, 0},
		{"deleting", func(p *corev1.Pod) { p.DeletionTimestamp = &p.CreationTimestamp }, 0},
	} {
		p := pod("v", 2, map[string]string{podspec.AnnGPUIndices: "0,1"}, "a")
		p.Status.Phase = corev1.PodRunning
		st := build([]*corev1.Node{node("a", 4)}, []*corev1.Pod{p}, nil)
		st.AssumeEvicted(p, time.Unix(5000, 0))
		st.Sync()
		if all, _ := st.Assumed(); all != 1 {
			t.Fatalf("%s: %d assumptions after the eviction, want 1", c.name, all)
		}
		q := p.DeepCopy()
		c.end(q)
		st.OnPod(q)
		st.Sync()
		if all, _ := st.Assumed(); all != c.still {
			t.Errorf("%s: %d assumptions once the informer shows it, want %d", c.name, all, c.still)
		}
	}
}

// A gang whose members disagree on what each asks (GPUs per pod, gang
// size or variability class) waits, naming the first member that
// differs from the first by name; members that agree queue.
func TestGangMembersMustAgree(t *testing.T) {
	for _, c := range []struct {
		name       string
		g0, g1     int
		cls0, cls1 string
		size1      int
		waits      bool
	}{
		{"agree", 2, 2, "A", "A", 2, false},
		{"GPUs", 2, 1, "A", "A", 2, true},
		{"size", 2, 2, "A", "A", 3, true},
		{"class", 2, 2, "A", "B", 2, true},
	} {
		st := build([]*corev1.Node{node("a", 8)}, []*corev1.Pod{
			pod("g-0", c.g0, gangAnn("g", 2, podspec.AnnClass, c.cls0), ""),
			pod("g-1", c.g1, gangAnn("g", c.size1, podspec.AnnClass, c.cls1), ""),
		}, nil)
		g := st.Snapshot().ByKey["ns/g"]
		if g == nil {
			t.Fatalf("%s: no gang ns/g", c.name)
		}
		if waits := g.State == GangWaiting; waits != c.waits || waits && !strings.Contains(g.Why, "members disagree") || waits && !strings.Contains(g.Why, "(pod g-1)") {
			t.Errorf("%s: state %v, why %q; want waiting %v, naming pod g-1", c.name, g.State, g.Why, c.waits)
		}
	}
}
