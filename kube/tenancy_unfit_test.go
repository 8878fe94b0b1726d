package kube

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
)

// A gang the cells cannot hold waits with a reason that speaks of the
// gang, not of the simulator's trace columns and an id internal to the
// round (an operator trial read 'field "pod_gpus": job 3 ...'). VC A is
// four 1-GPU cells on two 4-GPU nodes (testdata/gpu-cells.yaml).
func TestTenancyUnfitSpeaksOfTheGang(t *testing.T) {
	ann := func(gang string, n int) map[string]string { return gangAnn(gang, n, AnnVC, "A") }
	objs := []runtime.Object{node("n0", 4), node("n1", 4),
		pod("big-0", 4, ann("big", 2), ""), pod("big-1", 4, ann("big", 2), ""),
		pod("two-0", 2, ann("two", 2), ""), pod("two-1", 2, ann("two", 2), "")}
	cs, _ := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", "testdata/gpu-cells.yaml"
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), time.Now())
	for key, why := range map[string]string{
		"ns/big": "the gang needs 8 GPUs but VC A holds 4",
		"ns/two": "the gang has pods of 2 GPUs but the largest cell of VC A below a node holds 1",
	} {
		if s.lastWhy[key] != why {
			t.Errorf("%s waits with %q, want %q", key, s.lastWhy[key], why)
		}
	}
}
