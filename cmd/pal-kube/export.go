package main

import (
	"cmp"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
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

A table too big for kubectl apply to take in one ConfigMap (over 200 KiB
of data: about 170 nodes of 8 GPUs) is split by rows into shards, a
node's rows together: the output is then several ConfigMaps in one
YAML stream, the shards (<name>-<generation>-<i>, labelled
pal.io/shard-of=<name>) and last the named ConfigMap itself, which holds
the first rows and says how many ConfigMaps there are and of which
generation (pal.io/shards, pal.io/shard-generation). kubectl apply -f
takes them all, and pal-kube scheduler reads the generation its named
ConfigMap names.

-o is the format (kubernetes, ConfigMaps in YAML, the only one so far);
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
			y, err := exportConfigMaps(ns, name, gpuScores, keys, scores)
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

// exportConfigMaps is the YAML of the ConfigMaps that hold scores as ns/name:
// one ConfigMap when the table fits kubectl apply
// (kube.ApplyShardDataBytes), otherwise its shards and then the head
// (kube.SplitScoresCSV, kube.ShardConfigMaps), as a stream of documents:
// kubectl apply makes them in order, the head, which names the shards'
// generation, last.
func exportConfigMaps(ns, name, source string, keys []kube.GPUKey, scores kube.NodeScores) ([]byte, error) {
	var b strings.Builder
	if err := kube.WriteNodeScores(&b, keys, scores); err != nil {
		return nil, err
	}
	csv := b.String()
	parts, err := kube.SplitScoresCSV(csv, kube.ApplyShardDataBytes, kube.ApplyShardDataBytes)
	if err != nil {
		return nil, err
	}
	if len(parts) > 1 {
		// A node's rows together, nodes in the order they first come.
		first := map[string]int{}
		for i, k := range keys {
			if _, ok := first[k.Node]; !ok {
				first[k.Node] = i
			}
		}
		keys = slices.Clone(keys)
		slices.SortStableFunc(keys, func(a, b kube.GPUKey) int { return cmp.Compare(first[a.Node], first[b.Node]) })
		b.Reset()
		if err := kube.WriteNodeScores(&b, keys, scores); err != nil {
			return nil, err
		}
		if parts, err = kube.SplitScoresCSV(b.String(), kube.ApplyShardDataBytes, kube.ApplyShardDataBytes); err != nil {
			return nil, err
		}
	}
	_, headAnn, shards, err := kube.ShardConfigMaps(ns, name, parts)
	if err != nil {
		return nil, err
	}
	ann := map[string]string{"pal.io/source": source}
	maps.Copy(ann, headAnn)
	head := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: ann},
		Data: map[string]string{kube.ScoresKey: parts[0]}}
	var out []byte
	for _, cm := range append(shards, head) {
		cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		y, err := yaml.Marshal(cm)
		if err != nil {
			return nil, err
		}
		if len(out) > 0 {
			out = append(out, "---\n"...)
		}
		out = append(out, y...)
	}
	return out, nil
}
