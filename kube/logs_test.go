package kube

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/runtime"
)

// A bound gang leaves one INFO line naming it, its pods, nodes and GPUs.
func TestBoundGangLogLine(t *testing.T) {
	cs, _ := newFake(t, node("n0", 4), node("n1", 4), pod("g-0", 2, gangAnn("g", 2), ""), pod("g-1", 2, gangAnn("g", 2), ""))
	s, buf := startLogged(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	want := `level=INFO msg="bound gang" gang="gang ns/g" pods=2 nodes=n0 gpus=n0:0,1,2,3`
	if n := strings.Count(buf.String(), `msg="bound gang"`); n != 1 || !strings.Contains(buf.String(), want) {
		t.Fatalf("%d bound-gang lines, want one with %q; log:\n%s", n, want, buf)
	}
	nodes, gpus := bindSummary([]PodBind{{Node: "b", GPUs: []int{3}}, {Node: "a", GPUs: []int{1, 0}}, {Node: "b", GPUs: []int{2}}})
	if nodes != "b,a" || gpus != "b:2,3 a:0,1" {
		t.Errorf("summary %q %q, want b,a and b:2,3 a:0,1", nodes, gpus)
	}
}

// Without the variability ConfigMap, three unscored nodes give one
// warning (not one per node), and a second round gives none.
func TestUnscoredGPUsOneWarning(t *testing.T) {
	cs, _ := newFake(t, node("n2", 4), node("n0", 4), node("n1", 2))
	s, buf := startLogged(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	roundWait(s, context.Background(), time.Now())
	want := `level=WARN msg="10 GPUs on 3 nodes (n0, n1, n2) have no PM-score: ConfigMap pal-system/pal-variability does not exist; they count as median GPUs"`
	if n := strings.Count(buf.String(), "PM-score"); n != 1 || !strings.Contains(buf.String(), want) {
		t.Fatalf("%d PM-score lines, want one: %s\nlog:\n%s", n, want, buf)
	}
	got := unscoredSummary([]string{"g", "f", "e", "d", "c", "b", "a"}, 7, "x/y", false)
	if got != "7 GPUs on 7 nodes (a, b, c, d, e and 2 more) have no PM-score in ConfigMap x/y; they count as median GPUs" {
		t.Errorf("summary %q", got)
	}
}

// pal_bound_pods counts a pod as soon as it is bound, not at the next
// round's count.
func TestBoundPodsGaugeAtBind(t *testing.T) {
	cs, _ := newFake(t, []runtime.Object{node("n0", 4), node("n1", 4), pod("g-0", 2, gangAnn("g", 2), ""), pod("g-1", 2, gangAnn("g", 2), ""), pod("solo", 1, nil, "")}...)
	s := startRounds(t, testCfg(), cs)
	roundWait(s, context.Background(), time.Now())
	if v := testutil.ToFloat64(s.metrics.BoundNow); v != 3 {
		t.Errorf("pal_bound_pods %v right after 3 binds, want 3", v)
	}
	if v := testutil.ToFloat64(s.metrics.BoundPods); v != 3 {
		t.Errorf("pal_bound_pods_total %v, want 3", v)
	}
	// The next round counts the same 3 (assumed until the informer shows them).
	roundWait(s, context.Background(), time.Now())
	if v := testutil.ToFloat64(s.metrics.BoundNow); v != 3 {
		t.Errorf("pal_bound_pods %v after the next round, want 3", v)
	}
}

// pal_leader reads 1 on a replica that runs rounds without leader
// election, and 0 once it stops.
func TestLeaderGaugeWithoutElection(t *testing.T) {
	cs, _ := newFake(t, node("n0", 4))
	s, err := New(testCfg(), cs, discardLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() { done <- s.Run(ctx) }()
	deadline := time.Now().Add(10 * time.Second)
	for s.Rounds() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if v := testutil.ToFloat64(s.metrics.Leader); s.Rounds() == 0 || v != 1 {
		t.Errorf("pal_leader %v after %d rounds without election, want 1", v, s.Rounds())
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if v := testutil.ToFloat64(s.metrics.Leader); v != 0 {
		t.Errorf("pal_leader %v after Run returned, want 0", v)
	}
}
