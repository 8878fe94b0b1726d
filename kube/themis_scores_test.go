package kube

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Under scheduler themis the auction's bundles are variability-aware: the
// policy's topology carries the GPUs' speeds. The speeds were those of
// the scores when the policy was made (its first round, or a change of
// nodes or of the variability ConfigMap); scores learnt or quarantined
// later never reached it. Seen on a dev cluster: with gpu-node-006's
// GPU 0 quarantined by DCGM (2x), a 4-GPU gang of class A was bound on
// gpu-node-006 (pal.io/slowdown 2) while gpu-node-007, all healthy, was
// free.
//
// Nodes gpu-node-000 (1 GPU), gpu-node-001 and gpu-node-002 (4 each);
// DCGM shows gpu-node-001's GPU 1 at 1005 MHz under thermal slowdown
// (quarantineAbove 1.3). A 1-GPU pod placed at the first round makes the
// policy. Then a 4-GPU pod of class A comes: it must go to gpu-node-002,
// whether the GPU was quarantined before the policy was made or after.
func TestThemisAuctionSeesQuarantine(t *testing.T) {
	for _, late := range []bool{false, true} {
		name := "quarantined before the first auction"
		if late {
			name = "quarantined after the first auction"
		}
		t.Run(name, func(t *testing.T) {
			sample := a100Sample(t)
			first := sample
			if late {
				first = cooled(sample)
			}
			u, set := exporter(t, first)
			cfg := learnCfg()
			cfg.Scheduler = "themis"
			cfg.Period = Duration{time.Minute}
			cfg.DCGM.URLs = []string{u}
			cfg.QuarantineAbove = 1.3
			o := owned(pod("o-0", 1, map[string]string{AnnApp: "other"}, ""))
			o.CreationTimestamp = metav1.NewTime(learnT0)
			cs, fc := newFake(t, node("gpu-node-000", 1), node("gpu-node-001", 4), node("gpu-node-002", 4), o)
			s := startRounds(t, cfg, cs)
			ctx := context.Background()
			s.dcgm.scrape(ctx, cs, s.log)
			roundWait(s, ctx, learnT0)
			if b := fc.binds["o-0"]; b == nil || b.Target.Name != "gpu-node-000" {
				t.Fatalf("o-0 bound %+v, want gpu-node-000", b)
			}
			if late {
				set(sample)
				s.dcgm.scrape(ctx, cs, s.log)
				roundWait(s, ctx, learnT0.Add(60*time.Second))
			}
			q := owned(pod("q-0", 4, map[string]string{AnnApp: "q", AnnClass: "A"}, ""))
			q.CreationTimestamp = metav1.NewTime(learnT0.Add(90 * time.Second))
			if _, err := cs.CoreV1().Pods("ns").Create(ctx, q, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			waitInformer(t, s, "q-0", true)
			roundWait(s, ctx, learnT0.Add(120*time.Second))
			if b := fc.binds["q-0"]; b == nil || b.Target.Name != "gpu-node-002" {
				node := "(not bound)"
				if b != nil {
					node = b.Target.Name + " devices " + b.Annotations[AnnGPUIndices] + ", slowdown " + b.Annotations[AnnSlowdown]
				}
				t.Errorf("q-0 bound to %s; want gpu-node-002, whose GPUs are all healthy (gpu-node-001's GPU 1 is quarantined)", node)
			}
		})
	}
}
