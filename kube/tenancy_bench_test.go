package kube

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// hivedShape is a benchmark cluster under tenancy hived: racks of
// perRack 8-GPU nodes, vcs VCs of vcRacks racks each (the other racks
// bound to no VC), and waiting gangs; the first idle nodes of each rack
// run nothing, and every cordon-th node is cordoned (none when 0).
type hivedShape struct{ racks, perRack, vcs, vcRacks, waiting, idle, cordon int }

// benchHivedShape: the acceptance size (5,000 nodes x 8 GPUs), 4 VCs of
// 1,000 nodes each, 1,000 nodes bound to no VC, and 2,000 waiting gangs.
var benchHivedShape = hivedShape{racks: 100, perRack: 50, vcs: 4, vcRacks: 20, waiting: 2000}

// hivedCells is the shape's cells text: nodes gpu-00000 on, of cell type
// NODE (8 GPUs), in racks; VC vc<v> has vcRacks RACK cells.
func hivedCells(sh hivedShape) string {
	var b strings.Builder
	fmt.Fprintf(&b, "physicalCluster:\n  cellTypes:\n    NODE: {childCellType: GPU, childCellNumber: 8, isNodeLevel: true}\n    RACK: {childCellType: NODE, childCellNumber: %d}\n  physicalCells:\n", sh.perRack)
	for r := range sh.racks {
		b.WriteString("  - cellType: RACK\n    cellChildren:\n")
		for n := range sh.perRack {
			fmt.Fprintf(&b, "    - {cellAddress: gpu-%05d}\n", r*sh.perRack+n)
		}
	}
	b.WriteString("virtualClusters:\n")
	for v := range sh.vcs {
		fmt.Fprintf(&b, "  vc%d: {virtualCells: [{cellType: RACK, cellNumber: %d}]}\n", v, sh.vcRacks)
	}
	return b.String()
}

// hivedCluster is the shape's objects: every node runs one 8-GPU pod of
// its own Job (guaranteed, of the VC whose racks hold the node, or
// opportunistic on the racks of no VC), so every GPU is held and the
// round evicts nothing; and the waiting gangs, a mix of VCs, of
// guaranteed and opportunistic (one in four), of 1, 2, 4 and 8 GPUs in
// one pod and of 2 or 4 pods of 8 GPUs; one in ten selects the nodes of
// one rack (label rack=<its index>).
func hivedCluster(sh hivedShape) []runtime.Object {
	var objs []runtime.Object
	yes := true
	created := metav1.NewTime(time.Unix(1_700_000_000, 0))
	one := int32(1)
	all := []int{0, 1, 2, 3, 4, 5, 6, 7}
	for n := range sh.racks * sh.perRack {
		nodeName := fmt.Sprintf("gpu-%05d", n)
		nd := node(nodeName, 8)
		nd.Labels = map[string]string{"rack": fmt.Sprint(n / sh.perRack)}
		nd.Spec.Unschedulable = sh.cordon > 0 && n%sh.cordon == sh.cordon-1
		objs = append(objs, nd)
		if n%sh.perRack < sh.idle {
			continue
		}
		name := fmt.Sprintf("run-%05d", n)
		ann := map[string]string{AnnModel: "resnet50", AnnSlowdown: "1", AnnGPUIndices: FormatIndices(all),
			AnnBindInfo: mustJSON(BindInfo{Gang: "train/pod:" + name, Round: "2026-01-01T00:00:00Z",
				Pods: map[string]PodBind{name: {Node: nodeName, GPUs: all}}})}
		if r := n / sh.perRack; r < sh.vcs*sh.vcRacks {
			ann[AnnVC] = fmt.Sprintf("vc%d", r/sh.vcRacks)
		} else {
			ann[AnnVC], ann[AnnPriority] = fmt.Sprintf("vc%d", n%sh.vcs), "-1"
		}
		objs = append(objs, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: name, UID: k8stypes.UID("uid-job-" + name)},
			Spec: batchv1.JobSpec{Parallelism: &one}})
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: name, UID: k8stypes.UID("uid-" + name),
				CreationTimestamp: created, ResourceVersion: "1",
				Labels: map[string]string{"app": "train", "batch.kubernetes.io/job-name": name},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: name,
					UID: k8stypes.UID("uid-job-" + name), Controller: &yes}},
				Annotations: ann},
			Spec: corev1.PodSpec{SchedulerName: "pal", NodeName: nodeName, Containers: []corev1.Container{{Name: "train", Image: "train:latest",
				Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: GPUQuantity(8)}}}}},
			Status: corev1.PodStatus{Phase: corev1.PodRunning},
		}
		objs = append(objs, p)
	}
	later := metav1.NewTime(created.Add(time.Hour))
	shapes := []struct{ pods, per int }{{1, 1}, {1, 2}, {1, 4}, {1, 8}, {2, 8}, {4, 8}}
	for i := range sh.waiting {
		shape := shapes[i%len(shapes)]
		ann := map[string]string{AnnModel: "resnet50", AnnVC: fmt.Sprintf("vc%d", i%sh.vcs)}
		if (i/sh.vcs)%4 == 3 {
			ann[AnnPriority] = "-1"
		}
		var sel map[string]string
		if i%10 == 9 {
			sel = map[string]string{"rack": fmt.Sprint(i / 10 % sh.racks)}
		}
		gang := fmt.Sprintf("wait-%05d", i)
		if shape.pods > 1 {
			ann[AnnGang], ann[AnnGangSize] = gang, fmt.Sprint(shape.pods)
		}
		for k := range shape.pods {
			name := gang
			if shape.pods > 1 {
				name = fmt.Sprintf("%s-%d", gang, k)
			}
			objs = append(objs, &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: "train", Name: name, UID: k8stypes.UID("uid-" + name),
					CreationTimestamp: later, ResourceVersion: "1", Labels: map[string]string{"app": "train"}, Annotations: ann},
				Spec: corev1.PodSpec{SchedulerName: "pal", NodeSelector: sel, Containers: []corev1.Container{{Name: "train", Image: "train:latest",
					Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{ResourceGPU: GPUQuantity(shape.per)}}}}},
				Status: corev1.PodStatus{Phase: corev1.PodPending},
			})
		}
	}
	return objs
}

// BenchmarkHivedRound times one steady round under tenancy hived at the
// acceptance size: every GPU is held, so the waiting gangs wait, and each
// round explains each one's wait (tenancyStage.why).
//
//	go test ./kube -run '^$' -bench 'BenchmarkHivedRound' -benchtime 3x -count 6
//
// When this was written (medians of six on a shared, loaded 2-core
// machine): 2.25 s a round while why found each gang's reason alone,
// three quarters of it in why; 0.66 s with one reason found per key of
// gangs (whyKey), why then under a tenth of the round, the most of the
// rest the tenancy stage's admission and HiveD's placement; 0.33 s with
// admission's fit checks asked once per demand a round (tenant.DemandMemo)
// and HiveD's view sorted by slices.SortStableFunc, not sort.SliceStable;
// 0.13 s (against 0.26 s, load about 2) with each node selector matched
// against the nodes once, kept across rounds until a node's labels
// change (tenancyStage.allowMemo), and an opportunistic decision's
// sorted view kept while no cell's use or health changes
// (tenancy.Scheduler.oppView), the wait reasons then two fifths of the
// round; 0.05-0.06 s (against 0.13-0.15 s, load 3-5) with a key's
// candidate nodes, and an opportunistic key's pools on them, found once
// a round for every key that differs in size alone (whyRound.cands), a
// picky key's candidates found through its allowed names, not a scan of
// every node, and each node's device kinds and ids kept for the layout
// (whyRound.kindsOf): the wait reasons then a tenth of the round, the
// most of it HiveD's placement and admission.
func BenchmarkHivedRound(b *testing.B) {
	sh := benchHivedShape
	b.Run(fmt.Sprintf("%dx8/%dvcs/%dwaiting", sh.racks*sh.perRack, sh.vcs, sh.waiting), func(b *testing.B) {
		round, s := hivedRounds(b, sh)
		if got, want := len(s.lastWhy), sh.waiting; got != want {
			b.Fatalf("%d gangs wait, want %d", got, want)
		}
		b.ReportAllocs()
		b.ResetTimer()
		for i := range b.N {
			round(i)
		}
	})
}

// hivedRounds starts a scheduler under hived on the shape's cluster and
// runs its first two rounds; round(i) then runs the next, 10 s on.
func hivedRounds(tb testing.TB, sh hivedShape) (round func(i int), s *Scheduler) {
	tb.Helper()
	f := filepath.Join(tb.TempDir(), "cells.yaml")
	if err := os.WriteFile(f, []byte(hivedCells(sh)), 0o644); err != nil {
		tb.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	cfg.Tenancy, cfg.Cells = "hived", f
	return roundsOn(tb, cfg, hivedCluster(sh))
}

// The wait reasons found once per key of gangs (whyKey), on candidates
// found once per key less its size (whyRound.cands), are those each
// gang's own gives: on a small cluster with idle and cordoned nodes, a
// round's reasons, and each gang's found again alone.
func TestHivedWhyKeyed(t *testing.T) {
	sh := hivedShape{racks: 6, perRack: 5, vcs: 2, vcRacks: 2, waiting: 120, idle: 2, cordon: 7}
	_, s := hivedRounds(t, sh)
	snap := s.ten.whyR.snap
	var jobs []*workload.Job
	var kept []string
	for _, g := range snap.Gangs {
		if g.Job != nil && len(g.Pending) > 0 && s.lastWhy[g.Key] != "" {
			jobs = append(jobs, g.Job)
			kept = append(kept, s.ten.why(g.Job, snap))
		}
	}
	keys := len(s.ten.whyR.memo)
	if keys == 0 || keys >= len(jobs) {
		t.Fatalf("%d waiting gangs of %d keys, want fewer keys than gangs", len(jobs), keys)
	}
	texts := map[string]bool{}
	for i, j := range jobs {
		clear(s.ten.whyR.memo)
		clear(s.ten.whyR.cands)
		if alone := s.ten.why(j, snap); alone != kept[i] {
			t.Errorf("job %d waits with\n%q, found alone\n%q", j.ID, kept[i], alone)
		}
		texts[kept[i]] = true
	}
	if len(texts) < 3 {
		t.Errorf("%d gangs wait for %d reasons, want at least 3: %q", len(jobs), len(texts), slices.Collect(maps.Keys(texts)))
	}
	t.Logf("%d gangs, %d keys, %d reasons: %q", len(jobs), keys, len(texts), slices.Sorted(maps.Keys(texts)))
}

// A picky gang's candidates, found through its allowed node names, are
// those a scan of every node finds: in node order, once each, without
// the names the cells lack.
func TestHivedWhyCandidates(t *testing.T) {
	sh := hivedShape{racks: 6, perRack: 5, vcs: 2, vcRacks: 2, waiting: 12, idle: 2, cordon: 7}
	_, s := hivedRounds(t, sh)
	w := &s.ten.whyR
	kinds := w.oppKinds("")
	if len(kinds) == 0 {
		t.Fatal("no node kinds")
	}
	scan := func(allowed []string) []int {
		var out []int
		for i, n := range s.ten.l.Cluster.Nodes {
			if slices.Contains(allowed, n.Name) && slices.ContainsFunc(w.kinds[i], func(nk tenancy.NodeKind) bool { return slices.Contains(kinds, nk) }) {
				out = append(out, i)
			}
		}
		return out
	}
	for _, allowed := range [][]string{
		{"gpu-00003", "gpu-00001", "gpu-00002"},
		{"gpu-00029", "nowhere", "gpu-00000", "gpu-00029"},
		{"nowhere"},
	} {
		if got, want := w.candidates(kinds, true, allowed), scan(allowed); !slices.Equal(got, want) {
			t.Errorf("allowed %q: candidates %v, want %v", allowed, got, want)
		}
	}
	var every []string
	for _, n := range s.ten.l.Cluster.Nodes {
		every = append(every, n.Name)
	}
	if got, want := w.candidates(kinds, false, nil), scan(every); !slices.Equal(got, want) {
		t.Errorf("every node: candidates %v, want %v", got, want)
	}
}
