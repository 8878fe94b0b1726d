package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/palsched/pal/internal/csvin"
	"github.com/palsched/pal/kube"
	"github.com/palsched/pal/variability"
)

func newProfileExportCmd() *cobra.Command {
	var gpuScores, mapFile, nodeFormat, ns, name, out, format string
	var k8s bool
	c := &cobra.Command{
		Use:   "export",
		Short: "Write per-GPU PM values as the ConfigMap pal-kube scheduler reads",
		Long: `Turn a per-GPU score table (GPU_ID, Node_ID, PerfVar_classA..D and an
optional GPU_UUID, as pal sim --gpu-scores reads) into the ConfigMap that
pal-kube scheduler reads its PM-scores from: one row per device and class,
keyed by Kubernetes node name and device index.

Where each GPU is comes from --map (a CSV with columns uuid, node, index:
the physical GPU's UUID, the node it is in and its device index there);
without --map from the table's node_name and gpu_index columns when it has
them (pal profile build writes them for named nodes); otherwise from
Node_ID through --node-name (a printf format) and the GPU's rank by GPU_ID
within its node.

-o is the format (kubernetes, a ConfigMap in YAML, the only one so far);
--out is the file to write (stdout without it).`,
		Example: `  pal-kube profile export --gpu-scores gpu-scores.csv --out pal-variability.yaml
  pal-kube profile export --gpu-scores gpu-scores.csv --map gpus.csv | kubectl apply -f -`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			_ = k8s // the format's old spelling: -o kubernetes is the default
			if format != "kubernetes" {
				return fmt.Errorf("--output %q: want kubernetes (a ConfigMap in YAML, the only format so far)", format)
			}
			if gpuScores == "" {
				return fmt.Errorf("--gpu-scores is required")
			}
			gs, err := variability.ReadGPUScoresFile(gpuScores)
			if err != nil {
				return err
			}
			keys, err := gpuKeys(gs, mapFile, nodeFormat)
			if err != nil {
				return err
			}
			scores := kube.NodeScores{}
			for g, k := range keys {
				var v [variability.NumClasses]float64
				for c := range v {
					v[c] = gs.Table.Values[c][g]
				}
				if _, dup := scores[k]; dup {
					return fmt.Errorf("two GPUs map to %s index %d", k.Node, k.Index)
				}
				scores[k] = v
			}
			var b strings.Builder
			if err := kube.WriteNodeScores(&b, keys, scores); err != nil {
				return err
			}
			cm := corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
					Annotations: map[string]string{"pal.io/source": gpuScores}},
				Data: map[string]string{kube.ScoresKey: b.String()}}
			y, err := yaml.Marshal(cm)
			if err != nil {
				return err
			}
			var w io.Writer = cmd.OutOrStdout()
			if out != "" && out != "-" {
				return os.WriteFile(out, y, 0o644)
			}
			_, err = w.Write(y)
			return err
		},
	}
	fl := c.Flags()
	fl.StringVarP(&format, "output", "o", "kubernetes", "format: kubernetes (the ConfigMap pal-kube scheduler reads, YAML)")
	fl.BoolVar(&k8s, "kubernetes", false, "the same as -o kubernetes, the default")
	_ = fl.MarkDeprecated("kubernetes", "it is the default format (-o kubernetes)")
	fl.StringVar(&gpuScores, "gpu-scores", "", "per-GPU CSV: GPU_ID, Node_ID, PerfVar_classA..D [, GPU_UUID]")
	fl.StringVar(&mapFile, "map", "", "CSV uuid,node,index placing each GPU_UUID on a Kubernetes node")
	fl.StringVar(&nodeFormat, "node-name", "gpu-node-%03d", "without --map: node name from Node_ID (printf format)")
	fl.StringVar(&ns, "namespace", "pal-system", "ConfigMap namespace (the scheduler's)")
	fl.StringVar(&name, "name", "pal-variability", "ConfigMap name (the scheduler's variabilityConfigMap)")
	fl.StringVar(&out, "out", "-", "file to write (- for stdout)")
	return c
}

// gpuKeys places every GPU of the table on a node and device index.
func gpuKeys(gs *variability.GPUScores, mapFile, nodeFormat string) ([]kube.GPUKey, error) {
	n := gs.Table.NumGPUs()
	keys := make([]kube.GPUKey, n)
	if mapFile == "" && gs.NodeName != nil {
		for g := range n {
			keys[g] = kube.GPUKey{Node: gs.NodeName[g], Index: gs.Index[g]}
		}
		return keys, nil
	}
	if mapFile == "" {
		rank := map[int]int{}
		for g := range n {
			keys[g] = kube.GPUKey{Node: fmt.Sprintf(nodeFormat, gs.Node[g]), Index: rank[gs.Node[g]]}
			rank[gs.Node[g]]++
		}
		return keys, nil
	}
	f, err := os.Open(mapFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	t, err := csvin.Open(mapFile, f, csvin.Known("uuid", "node", "index"), csvin.EmptyMsg("empty (want a header uuid,node,index)"))
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("uuid", "node", "index")
	if err != nil {
		return nil, err
	}
	where := map[string]kube.GPUKey{}
	for t.Next() {
		u := strings.TrimSpace(t.Text(cols[0]))
		idx, err := t.Int(cols[2])
		if err != nil {
			return nil, err
		}
		if u == "" || strings.TrimSpace(t.Text(cols[1])) == "" || idx < 0 {
			return nil, t.Errorf(-1, "want a UUID, a node name and an index >= 0")
		}
		if _, dup := where[u]; dup {
			return nil, t.Errorf(cols[0], "UUID %s listed twice", u)
		}
		where[u] = kube.GPUKey{Node: strings.TrimSpace(t.Text(cols[1])), Index: idx}
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	for g := range n {
		if gs.UUID[g] == "" {
			return nil, fmt.Errorf("%s: GPU %d has no GPU_UUID, which --map needs", mapFile, g)
		}
		k, ok := where[gs.UUID[g]]
		if !ok {
			return nil, fmt.Errorf("%s: GPU %d's UUID %s is not in the map", mapFile, g, gs.UUID[g])
		}
		keys[g] = k
	}
	return keys, nil
}
