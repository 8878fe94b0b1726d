//go:build integration

package integration

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/variability"
)

// The learned scores of a large cluster on the real apiserver: a table of
// 5,000 simulated nodes of 8 GPUs (6 MB, past the apiserver's 1 MiB for
// one ConfigMap) is kept in shards, the dev cluster's node last. The
// scheduler starts from it, learns a step time, and writes a new
// generation the apiserver takes, every simulated device kept and the old
// generation's shards deleted; with the gang's pods gone, a restarted
// scheduler starts from that generation.
func TestLearnedScoresShardedOnDevCluster(t *testing.T) {
	e := newEnv(t, 1, 4)
	ctx := context.Background()
	r := rand.New(rand.NewPCG(11, 3))
	table := kube.NodeScores{}
	for n := range 5000 {
		for i := range 8 {
			var v [variability.NumClasses]float64
			for c := range v {
				v[c] = float64(800+r.IntN(600)) / 1000
			}
			table[kube.GPUKey{Node: fmt.Sprintf("a-sim-node-%05d", n), Index: i}] = v
		}
	}
	for i := range 4 {
		table[kube.GPUKey{Node: "gpu-node-000", Index: i}] = [variability.NumClasses]float64{1.25, 1.25, 1.25, 1.25}
	}
	keys := slices.SortedFunc(maps.Keys(table), kube.GPUKey.Compare)
	var b bytes.Buffer
	if err := kube.WriteNodeScores(&b, keys, table); err != nil {
		t.Fatal(err)
	}
	parts, err := kube.SplitScoresCSV(b.String(), kube.MaxConfigMapDataBytes, kube.ShardDataBytes)
	if err != nil {
		t.Fatal(err)
	}
	gen0, ann, shards, err := kube.ShardConfigMaps("pal-system", kube.DefaultLearnedScoresConfigMap, parts)
	if err != nil || len(shards) < 3 {
		t.Fatalf("%d shards: %v", len(shards), err)
	}
	cms := e.cs.CoreV1().ConfigMaps("pal-system")
	for _, sh := range shards {
		if _, err := cms.Create(ctx, sh, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	ann[kube.AnnLearnedObservations] = "5"
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: kube.DefaultLearnedScoresConfigMap, Namespace: "pal-system", Annotations: ann},
		Data: map[string]string{kube.ScoresKey: parts[0]}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	get := func(name string) (*corev1.ConfigMap, error) { return cms.Get(ctx, name, metav1.GetOptions{}) }

	cfg := testConfig()
	cfg.Scheduler, cfg.Placement = "fifo", "pal"
	cfg.LearnScores = true
	cfg.LearnedScoresWriteInterval = kube.Duration{}
	_, stop := e.runScheduler(cfg, "pal")
	names := e.gang("st", 2, 1, map[string]string{kube.AnnModel: "BERT"})
	e.eventually(30*time.Second, "the gang bound", func() bool { return e.bound(names...) })
	p := e.pod(names[0])
	idx, err := kube.ParseIndices(p.Annotations[kube.AnnGPUIndices])
	if err != nil || len(idx) != 1 {
		t.Fatalf("pod %s: %s=%q: %v", names[0], kube.AnnGPUIndices, p.Annotations[kube.AnnGPUIndices], err)
	}
	slow := kube.GPUKey{Node: p.Spec.NodeName, Index: idx[0]}
	e.annotate(names[0], kube.AnnStepTime, "0.5@"+time.Now().UTC().Format(time.RFC3339))
	bc := variability.ClassB
	var got kube.NodeScores
	var head *corev1.ConfigMap
	e.eventually(60*time.Second, "a new generation holds the slow device", func() bool {
		head, err = cms.Get(ctx, kube.DefaultLearnedScoresConfigMap, metav1.GetOptions{})
		if err != nil || head.Annotations[kube.AnnShardGeneration] == gen0 {
			return false
		}
		got, err = kube.ReadScoresConfigMap(head, get)
		return err == nil && got[slow][bc] > 1.25
	})
	for k, v := range table {
		if k.Node != "gpu-node-000" && got[k] != v {
			t.Fatalf("%+v: %v after the write, want %v", k, got[k], v)
		}
	}
	gen := head.Annotations[kube.AnnShardGeneration]
	e.eventually(30*time.Second, "only the new generation's shards", func() bool {
		l, err := cms.List(ctx, metav1.ListOptions{LabelSelector: kube.LabelShardOf + "=" + kube.DefaultLearnedScoresConfigMap})
		if err != nil {
			return false
		}
		for _, cm := range l.Items {
			if cm.Labels[kube.LabelShardGeneration] != gen {
				return false
			}
		}
		return strconv.Itoa(len(l.Items)+1) == head.Annotations[kube.AnnShards]
	})
	stop()
	head, err = cms.Get(ctx, kube.DefaultLearnedScoresConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got, err = kube.ReadScoresConfigMap(head, get); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d bytes of data in %s ConfigMaps", len(b.String()), head.Annotations[kube.AnnShards])

	if err := e.cs.CoreV1().Pods(e.ns).DeleteCollection(ctx, metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
		t.Fatal(err)
	}
	e.eventually(30*time.Second, "the gang's pods gone", func() bool {
		l, err := e.cs.CoreV1().Pods(e.ns).List(ctx, metav1.ListOptions{})
		return err == nil && len(l.Items) == 0
	})
	s2, _ := e.runScheduler(cfg, "restarted")
	var want []string
	for i := range 4 {
		v := got[kube.GPUKey{Node: "gpu-node-000", Index: i}][bc]
		want = append(want, fmt.Sprintf(`pal_learned_score{class="B",gpu="%d",node="gpu-node-000"} %s`, i, strconv.FormatFloat(v, 'g', -1, 64)))
	}
	var last string
	e.eventually(30*time.Second, "the restarted scheduler exports the learned scores", func() bool {
		rec := httptest.NewRecorder()
		s2.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
		last = rec.Body.String()
		for _, w := range want {
			if !strings.Contains(last, w+"\n") {
				return false
			}
		}
		return true
	})
}
