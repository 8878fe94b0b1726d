package main

import (
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/variability"
)

// A table that fits one ConfigMap is exported as it always was, byte for
// byte: testdata/export-small.yaml is the output of the export before
// tables were sharded.
func TestProfileExportSmallUnchanged(t *testing.T) {
	out, err := run(t, "profile", "export", "--gpu-scores", "testdata/export-small.csv")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/export-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if out != string(want) {
		t.Errorf("output changed:\n%s\nwant:\n%s", out, want)
	}
}

// kubectl apply (client-side) keeps the object applied, as JSON, in an
// annotation, and the apiserver allows 256 KiB of annotations.
const maxAnnotationBytes = 256 << 10

// A table of 1,000 nodes of 8 GPUs (1.2 MB of CSV) is exported as shards
// and then its head, each a ConfigMap kubectl apply takes, and together
// they read back as the table.
func TestProfileExportLargeSharded(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "g.csv")
	var b strings.Builder
	b.WriteString("GPU_ID,Node_ID,PerfVar_classA,PerfVar_classB,PerfVar_classC,PerfVar_classD\n")
	r := rand.New(rand.NewPCG(5, 5))
	want := kube.NodeScores{}
	for g := range 8000 {
		var v [variability.NumClasses]float64
		fmt.Fprintf(&b, "%d,%d", g, g/8)
		for c := range v {
			v[c] = float64(800+r.IntN(600)) / 1000
			fmt.Fprintf(&b, ",%g", v[c])
		}
		b.WriteString("\n")
		want[kube.GPUKey{Node: fmt.Sprintf("gpu-node-%03d", g/8), Index: g % 8}] = v
	}
	if err := os.WriteFile(in, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := run(t, "profile", "export", "--gpu-scores", in)
	if err != nil {
		t.Fatal(err)
	}
	docs := strings.Split(out, "\n---\n")
	byName := map[string]*corev1.ConfigMap{}
	var head *corev1.ConfigMap
	for i, d := range docs {
		cm := &corev1.ConfigMap{}
		if err := yaml.UnmarshalStrict([]byte(d), cm); err != nil {
			t.Fatalf("document %d: %v", i, err)
		}
		if cm.Kind != "ConfigMap" || cm.APIVersion != "v1" || cm.Namespace != "pal-system" {
			t.Errorf("document %d: %s %s in %q", i, cm.APIVersion, cm.Kind, cm.Namespace)
		}
		n := len(kube.ScoresKey) + len(cm.Data[kube.ScoresKey])
		j, _ := json.Marshal(cm)
		if n > kube.ApplyShardDataBytes || len(j) > maxAnnotationBytes-4096 {
			t.Errorf("configmap %s: %d bytes of data, %d of JSON", cm.Name, n, len(j))
		}
		byName[cm.Name] = cm
		head = cm
	}
	if head.Name != "pal-variability" || head.Annotations[kube.AnnShards] != fmt.Sprint(len(docs)) || len(docs) < 3 {
		t.Fatalf("last of %d documents: %s, annotations %v", len(docs), head.Name, head.Annotations)
	}
	got, err := kube.ReadScoresConfigMap(head, func(name string) (*corev1.ConfigMap, error) {
		if cm, ok := byName[name]; ok && name != head.Name {
			return cm, nil
		}
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	})
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, want) {
		t.Errorf("read back %d GPUs, want the %d exported", len(got), len(want))
	}
}
