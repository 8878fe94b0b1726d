package kube

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
)

// fuzzAnns are the annotations a fuzzed pod may carry, by short name.
var fuzzAnns = map[string]string{
	"gang": AnnGang, "size": AnnGangSize, "class": AnnClass, "model": AnnModel, "iters": AnnIterations,
	"idx": AnnGPUIndices, "info": AnnBindInfo, "slow": AnnSlowdown, "app": AnnApp, "lease": AnnLeaseUntil,
	"progress": AnnProgress, "step": AnnStepTime, "vc": AnnVC, "prio": AnnPriority, "pinned": AnnPinnedCell, "leaf": AnnLeafCellType,
	"bfhead": AnnBackfillHead, "bfpromise": AnnBackfillPromise,
}

// fuzzPods reads pods from a spec, one per line, fields split by '|':
// GPU requests of each container (comma-separated quantities), the node
// it is bound to ("" pending), the controller ("", "job:NAME", "set"),
// the PodGroup it names ("native:NAME", "cosched:NAME"), and annotations
// as key=value;key=value with fuzzAnns' short keys. Whatever does not
// read is left out: the fuzzer explores the scheduler, not this format.
func fuzzPods(spec string, at time.Time) []*corev1.Pod {
	var out []*corev1.Pod
	yes := true
	for i, line := range strings.Split(spec, "\n") {
		if i >= 6 {
			break
		}
		f := strings.Split(line, "|")
		for len(f) < 5 {
			f = append(f, "")
		}
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("f%d", i), UID: k8stypes.UID(fmt.Sprintf("uf%d", i)),
			Annotations: map[string]string{}, CreationTimestamp: metav1.NewTime(at.Add(time.Duration(i) * time.Second))},
			Spec: corev1.PodSpec{SchedulerName: "pal", NodeName: f[1]}}
		for k, q := range strings.Split(f[0], ",") {
			if k >= 4 {
				break
			}
			c := corev1.Container{Name: fmt.Sprintf("c%d", k)}
			if v, err := resource.ParseQuantity(q); err == nil {
				c.Resources.Limits = corev1.ResourceList{ResourceGPU: v}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
		switch owner := f[2]; {
		case strings.HasPrefix(owner, "job:"):
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: owner[4:], UID: "uj", Controller: &yes}}
		case owner == "set":
			p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "s", UID: "us", Controller: &yes}}
		}
		switch g := f[3]; {
		case strings.HasPrefix(g, "native:"):
			name := g[7:]
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: &name}
		case strings.HasPrefix(g, "cosched:"):
			p.Labels = map[string]string{LabelCoschedPodGroup: g[8:]}
		}
		for _, kv := range strings.Split(f[4], ";") {
			k, v, ok := strings.Cut(kv, "=")
			if a := fuzzAnns[k]; ok && a != "" {
				p.Annotations[a] = v
			}
		}
		if p.Spec.NodeName != "" {
			p.Status.Phase = corev1.PodRunning
		}
		out = append(out, p)
	}
	return out
}

// fuzzConfigs are every scheduling order under every tenancy (quota
// under themis is refused by the config itself), and FIFO under EASY
// backfill (which reads the backfill records of running gangs).
func fuzzConfigs() []Config {
	bf := testCfg()
	bf.Backfill = "easy"
	out := []Config{bf}
	for _, sched := range []string{"fifo", "las", "srtf", "tiresias-las", "themis"} {
		for _, ten := range []string{"none", "quota", "hived"} {
			if sched == "themis" && ten == "quota" {
				continue
			}
			c := testCfg()
			c.Scheduler, c.Tenancy = sched, ten
			if ten != "none" {
				c.Cells = "testdata/two-vcs.yaml"
			}
			out = append(out, c)
		}
	}
	return out
}

// Pods built from arbitrary resources, every pal.io annotation, owner
// references and PodGroup references go through whole rounds on two
// 4-GPU nodes under every scheduling order and tenancy: no round faults
// (pal_round_errors_total stays 0), no GPU is given twice, nothing is
// bound beyond its node.
func FuzzRoundPods(f *testing.F) {
	f.Add("1|||| gang=g;size=2;model=BERT;iters=100\n1|||| gang=g;size=2;model=BERT;iters=100")
	f.Add("9000000000000000,9000000000000000||||app=x\n1||||app=y;model=BERT")
	f.Add("2|n0|set||gang=w;size=2;idx=0,1;info={\"gang\":\"ns/w\",\"round\":\"x\",\"pods\":{\"f0\":{\"node\":\"n0\",\"gpus\":[0,1]},\"f1\":{\"node\":\"n1\",\"gpus\":[7]}}}\n2|||| gang=w;size=2")
	f.Add("4||job:j||vc=A;prio=10\n1||||vc=B;prio=-1\n1||||vc=C\n2||||vc=A;pinned=nope;leaf=K80")
	f.Add("-1||||\n500m||||\n1||||iters=NaN\n1||||iters=1e300;class=Z\n1|n9|||idx=0\n1|n0|||idx=0,0")
	f.Add("1|||native:pg|\n1|||cosched:x|\n1||||app=x;lease=2020-01-01T00:00:00Z;progress=5@now;step=1@x")
	f.Add("8||||model=BERT\n8||||model=BERT\n4|n1|||idx=0,1,2,3;model=BERT;iters=1")
	f.Add("2|n0|set||idx=0,1;model=BERT;iters=9;bfhead=ns/pod:f1;bfpromise=NaN\n8||||model=BERT;iters=5\n" +
		"2|n1|set||idx=0,1;bfhead=ns/pod:f1;bfpromise=2027-01-15T08:00:00.5Z\n2|n1|set||idx=2,3;bfhead=ns/pod:f3;bfpromise=1e308")
	cfgs := fuzzConfigs()
	f.Fuzz(func(t *testing.T, spec string) {
		if len(spec) > 4096 {
			return
		}
		t0 := time.Unix(1_800_000_000, 0)
		for _, cfg := range cfgs {
			w := newWorld(t, cfg, 1, 2, 4)
			for _, p := range fuzzPods(spec, t0.Add(-time.Minute)) {
				w.mu.Lock()
				w.put(p)
				w.mu.Unlock()
			}
			for r := range 3 {
				w.deliver(-1)
				w.round(t0.Add(time.Duration(r) * time.Minute))
			}
			if err := w.check(); err != nil {
				t.Fatalf("%s/%s: %v", cfg.Scheduler, cfg.Tenancy, err)
			}
			for _, st := range []string{"plan", "complete", "bind", "round"} {
				if n := testutil.ToFloat64(w.s.metrics.RoundErrors.WithLabelValues(st)); n != 0 {
					l := w.log.String()
					t.Fatalf("%s/%s: %v faults in stage %s\n%s", cfg.Scheduler, cfg.Tenancy, n, st, l[max(0, len(l)-3000):])
				}
			}
		}
	})
}

var _ = strconv.Itoa
