package kube

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/internal/quote"
)

// Scores tables too big for one ConfigMap. The apiserver refuses a
// ConfigMap whose data holds more than MaxConfigMapDataBytes: a table of
// per-GPU scores passes that at about 7,000 GPUs (some 150 bytes a GPU).
// Such a table is split by rows into shards: the named ConfigMap (the
// head) holds the first under ScoresKey, with AnnShards (how many there
// are, the head's included) and AnnShardGeneration (the generation: a
// hash of the shards' content); shard i (1..N-1) is the ConfigMap
// ShardName(head, generation, i), labelled LabelShardOf (the head's name)
// and LabelShardGeneration, and annotated with its generation too. Each
// shard is a whole CSV (the header, then whole devices' rows, a node's
// rows together), so each reads and reports errors on its own.
//
// A reader takes the head's generation and reads that generation's
// shards only; a writer writes the shards of the new generation first,
// then the head (the commit point), then deletes the shards of other
// generations. A table that fits one ConfigMap is stored whole, as it
// always was: no shard annotations, no shards.
const (
	// AnnShards on a head: how many ConfigMaps hold its table, itself
	// included (2..MaxShards).
	AnnShards = "pal.io/shards"
	// AnnShardGeneration on a head and on each of its shards: the
	// generation (the first 16 hex digits of the SHA-256 of the shards'
	// data, in order).
	AnnShardGeneration = "pal.io/shard-generation"
	// LabelShardOf on a shard: its head's name.
	LabelShardOf = "pal.io/shard-of"
	// LabelShardGeneration on a shard: its generation, for selectors
	// (kubectl delete configmap -l ...).
	LabelShardGeneration = "pal.io/shard-generation"

	// MaxConfigMapDataBytes is the apiserver's limit on a ConfigMap's
	// data: the bytes of its data and binaryData keys and values, all
	// together, at most 1 MiB (1048576 bytes; corev1 has no constant for
	// it: the apiserver's validation checks against its internal
	// MaxSecretSize).
	MaxConfigMapDataBytes = 1 << 20
	// ShardDataBytes is the most data the scheduler puts in one shard
	// (key and value): 900 KiB, leaving room under MaxConfigMapDataBytes
	// for other keys someone keeps in the head.
	ShardDataBytes = 900 << 10
	// ApplyShardDataBytes is the most data `pal-kube profile export` puts
	// in one ConfigMap when it shards: kubectl apply (client-side) keeps
	// the whole object in an annotation, and the apiserver allows 256 KiB
	// of annotations.
	ApplyShardDataBytes = 200 << 10
	// MaxShards bounds a head's AnnShards: a reader does no more work
	// than that for whatever a head says.
	MaxShards = 1000
)

// ShardName is the name of shard i of a head's generation gen.
func ShardName(head, gen string, i int) string {
	return head + "-" + gen + "-" + strconv.Itoa(i)
}

// ShardGeneration is the generation of a table held as parts: the first
// 16 hex digits of the SHA-256 of the parts, each preceded by its length.
func ShardGeneration(parts []string) string {
	h := sha256.New()
	for _, p := range parts {
		fmt.Fprintf(h, "%d\n", len(p))
		h.Write([]byte(p))
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// SplitScoresCSV splits a scores table (WriteNodeScores' CSV: a header,
// then rows whose first field is the node) into the parts the ConfigMaps
// hold. A table whose data (ScoresKey and the table) is at most whole
// bytes is one part, itself; a bigger one is split into parts of at most
// shard bytes of data each, each the header and whole rows, a node's
// consecutive rows in one part. A node whose rows alone pass shard is an
// error naming it.
//
// The scheduler keeps every table the apiserver takes whole (whole =
// MaxConfigMapDataBytes, shard = ShardDataBytes); `pal-kube profile
// export` every table kubectl apply takes (whole = shard =
// ApplyShardDataBytes).
func SplitScoresCSV(csv string, whole, shard int) ([]string, error) {
	if len(ScoresKey)+len(csv) <= whole {
		return []string{csv}, nil
	}
	header, rest, ok := strings.Cut(csv, "\n")
	if !ok {
		return nil, fmt.Errorf("scores table of %d bytes has no line end", len(csv))
	}
	header += "\n"
	room := shard - len(ScoresKey) - len(header)
	var parts []string
	var cur strings.Builder
	flush := func() {
		if cur.Len() > 0 {
			parts = append(parts, header+cur.String())
			cur.Reset()
		}
	}
	for rest != "" {
		// One node's consecutive rows: a block.
		node, _, _ := strings.Cut(rest, ",")
		end := 0
		for end < len(rest) {
			line := rest[end:]
			if n, _, _ := strings.Cut(line, ","); n != node {
				break
			}
			i := strings.IndexByte(line, '\n')
			if i < 0 {
				end = len(rest)
				break
			}
			end += i + 1
		}
		if end == 0 { // a row without a comma: keep it whole
			if i := strings.IndexByte(rest, '\n'); i >= 0 {
				end = i + 1
			} else {
				end = len(rest)
			}
		}
		block := rest[:end]
		rest = rest[end:]
		if len(block) > room {
			return nil, fmt.Errorf("node %s's rows are %d bytes, more than a ConfigMap shard holds (%d)", quote.Value(node), len(block), room)
		}
		if cur.Len()+len(block) > room {
			flush()
		}
		cur.WriteString(block)
	}
	flush()
	if len(parts) > MaxShards {
		return nil, fmt.Errorf("scores table of %d bytes needs %d ConfigMaps, more than %d", len(csv), len(parts), MaxShards)
	}
	return parts, nil
}

// shardedHeadName checks that a head of this name can have shards: its
// name is a label value (LabelShardOf), and its shards' names are within
// the 253 characters of a ConfigMap's name.
func shardedHeadName(head string, n int) error {
	if len(head) > 63 {
		return fmt.Errorf("configmap name %s is longer than 63 characters: too long to label the shards of its scores table (%d ConfigMaps)", quote.Value(head), n)
	}
	return nil
}

// ShardConfigMaps are the ConfigMaps that hold parts (SplitScoresCSV)
// as head ns/name: the head's annotations to set (nil when the table is
// whole: then a head has none of AnnShards and AnnShardGeneration) and
// the shards 1..N-1, labelled and annotated with their generation.
func ShardConfigMaps(ns, name string, parts []string) (gen string, headAnn map[string]string, shards []*corev1.ConfigMap, err error) {
	if len(parts) <= 1 {
		return "", nil, nil, nil
	}
	if err := shardedHeadName(name, len(parts)); err != nil {
		return "", nil, nil, err
	}
	gen = ShardGeneration(parts)
	headAnn = map[string]string{AnnShards: strconv.Itoa(len(parts)), AnnShardGeneration: gen}
	for i := 1; i < len(parts); i++ {
		shards = append(shards, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: ShardName(name, gen, i), Namespace: ns,
				Labels:      map[string]string{LabelShardOf: name, LabelShardGeneration: gen},
				Annotations: map[string]string{AnnShardGeneration: gen}},
			Data: map[string]string{ScoresKey: parts[i]}})
	}
	return gen, headAnn, shards, nil
}

// scoresPart is one ConfigMap's part of a scores table, and how errors
// name it.
type scoresPart struct {
	src, data string
}

// shardGetter reads a ConfigMap of the head's namespace by name (the
// scheduler's lister): a missing one is a NotFound error.
type shardGetter func(name string) (*corev1.ConfigMap, error)

// headShards reads a head's shard annotations: (1, "") for a whole
// table. Errors name the ConfigMap and the annotation.
func headShards(head *corev1.ConfigMap) (n int, gen string, err error) {
	src := head.Namespace + "/" + head.Name
	nv, hasN := head.Annotations[AnnShards]
	gv, hasG := head.Annotations[AnnShardGeneration]
	if !hasN && !hasG {
		return 1, "", nil
	}
	if !hasN {
		return 0, "", fmt.Errorf("configmap %s has annotation %s but not %s", src, AnnShardGeneration, AnnShards)
	}
	if len(nv) > 4 {
		nv = nv[:4] + "..." // quoted below; its length is all that matters
	}
	if n, err = strconv.Atoi(nv); err != nil || n < 1 || n > MaxShards {
		return 0, "", fmt.Errorf("configmap %s annotation %s=%s: want a count of ConfigMaps 1..%d", src, AnnShards, quote.Value(nv), MaxShards)
	}
	if !hasG {
		return 0, "", fmt.Errorf("configmap %s has annotation %s but not %s", src, AnnShards, AnnShardGeneration)
	}
	if !validGeneration(gv) {
		if len(gv) > 80 {
			gv = gv[:80] + "..."
		}
		return 0, "", fmt.Errorf("configmap %s annotation %s=%s: want 1 to 63 lowercase letters and digits", src, AnnShardGeneration, quote.Value(gv))
	}
	if n > 1 {
		if err := shardedHeadName(head.Name, n); err != nil {
			return 0, "", fmt.Errorf("configmap %s annotation %s=%d: %w", src, AnnShards, n, err)
		}
	}
	return n, gv, nil
}

func validGeneration(g string) bool {
	if g == "" || len(g) > 63 {
		return false
	}
	for i := 0; i < len(g); i++ {
		if c := g[i]; !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

// scoresParts reads the parts of the scores table that head holds: its
// ScoresKey, and when it is sharded (AnnShards) those of the shards of
// its generation, in order. A shard missing, of another generation, or
// a content that is not the generation's is an error naming the
// ConfigMap: never a table of two generations.
func scoresParts(head *corev1.ConfigMap, get shardGetter) ([]scoresPart, error) {
	src := head.Namespace + "/" + head.Name
	n, gen, err := headShards(head)
	if err != nil {
		return nil, err
	}
	parts := []scoresPart{{src: "configmap " + src + " key " + ScoresKey, data: head.Data[ScoresKey]}}
	if gen == "" {
		return parts, nil
	}
	for i := 1; i < n; i++ {
		name := ShardName(head.Name, gen, i)
		ssrc := head.Namespace + "/" + name
		cm, err := get(name)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("configmap %s: missing; it is shard %d of %d of the scores of configmap %s (generation %s)", ssrc, i+1, n, src, gen)
		}
		if err != nil {
			return nil, fmt.Errorf("configmap %s (shard %d of %d of configmap %s): %w", ssrc, i+1, n, src, err)
		}
		if g := cm.Annotations[AnnShardGeneration]; g != gen {
			return nil, fmt.Errorf("configmap %s annotation %s=%s: want %s, the generation of configmap %s", ssrc, AnnShardGeneration, quote.Value(g), gen, src)
		}
		data, ok := cm.Data[ScoresKey]
		if !ok {
			return nil, fmt.Errorf("configmap %s has no key %s; it is shard %d of %d of configmap %s", ssrc, ScoresKey, i+1, n, src)
		}
		parts = append(parts, scoresPart{src: "configmap " + ssrc + " key " + ScoresKey, data: data})
	}
	texts := make([]string, len(parts))
	for i, p := range parts {
		texts[i] = p.data
	}
	if g := ShardGeneration(texts); g != gen {
		return nil, fmt.Errorf("configmap %s: its %d shards' content is of generation %s, not its annotation %s=%s (a shard changed after it was written)", src, n, g, AnnShardGeneration, gen)
	}
	return parts, nil
}

// ReadScoresConfigMap reads the scores table head holds, sharded or
// whole (scoresParts): each part reads as ReadNodeScores reads it, and a
// device in two parts is an error naming both.
func ReadScoresConfigMap(head *corev1.ConfigMap, get shardGetter) (NodeScores, error) {
	parts, err := scoresParts(head, get)
	if err != nil {
		return nil, err
	}
	if len(parts) == 1 {
		return ReadNodeScores(parts[0].src, strings.NewReader(parts[0].data))
	}
	out := NodeScores{}
	from := map[GPUKey]int{}
	for i, p := range parts {
		ns, err := ReadNodeScores(p.src, strings.NewReader(p.data))
		if err != nil {
			return nil, err
		}
		for k, v := range ns {
			if j, dup := from[k]; dup {
				return nil, fmt.Errorf("%s and %s: both hold %s/%d", parts[j].src, p.src, k.Node, k.Index)
			}
			from[k] = i
			out[k] = v
		}
	}
	return out, nil
}
