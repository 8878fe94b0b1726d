package kube

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// foreignOn shows the scheduler another scheduler's running 1-GPU pod on
// device dev of node n.
func foreignOn(w *world, name, n string, dev int) {
	p := running(pod(name, 1, map[string]string{AnnGPUIndices: itoa(dev)}, n))
	p.Spec.SchedulerName = "default-scheduler"
	w.s.state.OnBoundPod(p)
}

// themisLeases lists the GPUs the (plain) Themis policy holds a lease on
// now, as node/device:app, sorted by GPU.
func themisLeases(w *world) string {
	th := w.s.th
	if th == nil || th.pol == nil {
		return ""
	}
	snap := w.s.state.Snapshot()
	var out []string
	for g := range snap.Cluster.Size() {
		if app, _ := th.pol.Lease(g, th.now); app != "" {
			n, d := snap.Device(g)
			out = append(out, fmt.Sprintf("%s/%d:%s", n, d, app))
		}
	}
	return strings.Join(out, " ")
}

// A one-pod gang's GPUs must all be on the pod's node, and under
// scheduler themis the auction's plan is what the policy leases. The
// auction picked GPUs by its bundles alone: on two 2-GPU nodes with one
// device of each taken by another scheduler's pod, a pod of 2 GPUs was
// planned on n0/1 and n1/1, which no pod can use; the round could not
// bind it, while the policy leased both GPUs to its app (and planned them
// again at every round, as a grant the driver did not carry out), so a
// 1-GPU gang of another app arriving next waited behind a gang that
// could not run. Where the pod fits on one node (a third, free node), it
// is bound there and the policy's lease names exactly its two GPUs.
func TestThemisPlansPodsWithinNodes(t *testing.T) {
	cfg := testCfg()
	cfg.Scheduler = "themis"
	// nodes 2-GPU nodes, device 0 of n0 and n1 taken by another
	// scheduler's pods, and b (one pod of 2 GPUs) arriving.
	setup := func(t *testing.T, nodes int) (*world, time.Time) {
		w := newWorld(t, cfg, 1, nodes, 2)
		at := time.Unix(1_700_000_000, 0)
		foreignOn(w, "x0", "n0", 0)
		foreignOn(w, "x1", "n1", 0)
		w.create("b-0", 2, map[string]string{AnnModel: "BERT", AnnIterations: "100000"}, at)
		return w, at
	}
	t.Run("fits nowhere", func(t *testing.T) {
		w, at := setup(t, 2)
		w.expect(&at, "b arrives", "")
		if got := themisLeases(w); got != "" {
			t.Errorf("b-0 waits, and the policy leases %s", got)
		}
		w.create("c-0", 1, map[string]string{AnnModel: "BERT", AnnIterations: "100000"}, at)
		got := w.step(&at, "c arrives")
		if got != "ns/c-0@n0[1]" && got != "ns/c-0@n1[1]" {
			t.Fatalf("c arrives: bound %q, want c-0 on a free device\n%s", got, w.log.String())
		}
		n, d, _ := strings.Cut(strings.TrimPrefix(got, "ns/c-0@"), "[")
		if want := fmt.Sprintf("%s/%s:ns/pod:c-0", n, strings.TrimSuffix(d, "]")); themisLeases(w) != want {
			t.Fatalf("c bound %s, the policy leases %q, want %q", got, themisLeases(w), want)
		}
	})
	t.Run("fits on one node", func(t *testing.T) {
		w, at := setup(t, 3)
		w.expect(&at, "b arrives", "ns/b-0@n2[0,1]")
		if got := themisLeases(w); got != "n2/0:ns/pod:b-0 n2/1:ns/pod:b-0" {
			t.Fatalf("b bound on n2, the policy leases %q", got)
		}
		for range 3 {
			w.expect(&at, "b runs", "ns/b-0@n2[0,1]")
		}
		if n := testutil.ToFloat64(w.s.metrics.LeaseRevocations); n != 0 {
			t.Fatalf("%v lease revocations", n)
		}
	})
}
