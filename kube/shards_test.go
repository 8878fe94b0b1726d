package kube

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/palsched/pal/variability"
)

// noShards is a getter with no ConfigMap: a whole table reads without it.
func noShards(name string) (*corev1.ConfigMap, error) {
	return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
}

// clientShards reads shards from a clientset, as the scheduler's lister
// reads them from its informer.
func clientShards(cs *fake.Clientset, ns string) shardGetter {
	return func(name string) (*corev1.ConfigMap, error) {
		return cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	}
}

// bigTable is a seeded table of nodes x per GPUs, its keys sorted.
func bigTable(nodes, per int, seed uint64) ([]GPUKey, NodeScores) {
	r := rand.New(rand.NewPCG(seed, 1))
	s := NodeScores{}
	keys := make([]GPUKey, 0, nodes*per)
	for n := range nodes {
		for i := range per {
			k := GPUKey{fmt.Sprintf("gpu-node-%05d", n), i}
			var v [variability.NumClasses]float64
			for c := range v {
				v[c] = 0.8 + 0.6*r.Float64()
			}
			s[k] = v
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, GPUKey.Compare)
	return keys, s
}

func tableCSV(t testing.TB, keys []GPUKey, s NodeScores) string {
	t.Helper()
	var b bytes.Buffer
	if err := WriteNodeScores(&b, keys, s); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// configMapDataBytes is a ConfigMap's data as the apiserver's validation
// counts it against MaxConfigMapDataBytes: every key and value of data
// and binaryData.
func configMapDataBytes(cm *corev1.ConfigMap) int {
	n := 0
	for k, v := range cm.Data {
		n += len(k) + len(v)
	}
	for k, v := range cm.BinaryData {
		n += len(k) + len(v)
	}
	return n
}

// sizeLimited makes cs refuse a ConfigMap over MaxConfigMapDataBytes
// with the apiserver's 422 (Invalid), and records the size of each one
// it takes.
type sizeLimited struct {
	mu      sync.Mutex
	written map[string]int // name -> data bytes of its last write
}

func limitConfigMaps(cs *fake.Clientset) *sizeLimited {
	sl := &sizeLimited{written: map[string]int{}}
	react := func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm, ok := a.(interface{ GetObject() runtime.Object }).GetObject().(*corev1.ConfigMap)
		if !ok {
			return false, nil, nil
		}
		n := configMapDataBytes(cm)
		if n > MaxConfigMapDataBytes {
			return true, nil, apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, cm.Name,
				field.ErrorList{field.TooLong(field.NewPath("data"), "", MaxConfigMapDataBytes)})
		}
		sl.mu.Lock()
		sl.written[cm.Name] = n
		sl.mu.Unlock()
		return false, nil, nil
	}
	cs.PrependReactor("create", "configmaps", react)
	cs.PrependReactor("update", "configmaps", react)
	return sl
}

func shardsOf(t *testing.T, cs *fake.Clientset, head string) []corev1.ConfigMap {
	t.Helper()
	l, err := cs.CoreV1().ConfigMaps("pal-system").List(context.Background(), metav1.ListOptions{LabelSelector: LabelShardOf + "=" + head})
	if err != nil {
		t.Fatal(err)
	}
	return l.Items
}

// The learned scores of 5,000 nodes of 8 GPUs (the project's largest
// cluster: some 6 MB of CSV) are written, each ConfigMap within the
// apiserver's 1 MiB, and a restarted scheduler reads them back whole.
func TestLearnedScoresShardedRoundTrip(t *testing.T) {
	keys, table := bigTable(5000, 8, 7)
	csv := tableCSV(t, keys, table)
	cs, _ := newFake(t, node("gpu-node-00000", 8))
	sl := limitConfigMaps(cs)
	s := startRounds(t, learnCfg(), cs)
	ann := map[string]string{AnnLearnedObservations: "12"}
	if err := s.putLearned(context.Background(), csv, ann); err != nil {
		t.Fatalf("write of a %d-byte table: %v", len(csv), err)
	}
	head := learnedCM(t, cs)
	shards := shardsOf(t, cs, DefaultLearnedScoresConfigMap)
	if head.Annotations[AnnShards] != fmt.Sprint(len(shards)+1) || len(shards) < 6 {
		t.Errorf("head says %s ConfigMaps, %d shards found", head.Annotations[AnnShards], len(shards))
	}
	total := 0
	for name, n := range sl.written {
		if n > MaxConfigMapDataBytes || n > ShardDataBytes {
			t.Errorf("configmap %s: %d bytes of data", name, n)
		}
		total += n
	}
	t.Logf("%d bytes of CSV in %d ConfigMaps: %v", len(csv), len(sl.written), sl.written)
	got, err := ReadScoresConfigMap(head, clientShards(cs, "pal-system"))
	if err != nil {
		t.Fatal(err)
	}
	if !maps.Equal(got, table) {
		t.Fatalf("read back %d GPUs, not the %d written", len(got), len(table))
	}

	// A restarted scheduler starts from them (its informer's shards).
	s2 := startRounds(t, learnCfg(), cs)
	s2.loadLearned()
	if s2.learn.loadErr != nil || !maps.Equal(s2.learn.known, table) || s2.learn.count != 12 {
		t.Fatalf("restarted: error %v, %d GPUs known (want %d), count %d", s2.learn.loadErr, len(s2.learn.known), len(table), s2.learn.count)
	}
}

// A write whose head update fails after its shards were written leaves
// the previous generation whole to readers; the next write commits and
// deletes the old generation's shards.
func TestLearnedShardsTornWrite(t *testing.T) {
	keys, a := bigTable(1000, 8, 1)
	_, b := bigTable(1000, 8, 2)
	cs, _ := newFake(t, node("gpu-node-00000", 8))
	limitConfigMaps(cs)
	s := startRounds(t, learnCfg(), cs)
	ctx := context.Background()
	if err := s.putLearned(ctx, tableCSV(t, keys, a), map[string]string{}); err != nil {
		t.Fatal(err)
	}
	genA := learnedCM(t, cs).Annotations[AnnShardGeneration]
	fail := true
	var commitErr error // the head as written, read at its commit
	cs.PrependReactor("update", "configmaps", func(act k8stesting.Action) (bool, runtime.Object, error) {
		cm := act.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		if cm.Name != DefaultLearnedScoresConfigMap {
			return false, nil, nil
		}
		// The shards the new head names are there before it is written.
		_, commitErr = ReadScoresConfigMap(cm, func(name string) (*corev1.ConfigMap, error) {
			o, err := cs.Tracker().Get(corev1.SchemeGroupVersion.WithResource("configmaps"), "pal-system", name)
			if err != nil {
				return nil, err
			}
			return o.(*corev1.ConfigMap), nil
		})
		if fail {
			return true, nil, apierrors.NewServiceUnavailable("apiserver going away")
		}
		return false, nil, nil
	})
	if err := s.putLearned(ctx, tableCSV(t, keys, b), map[string]string{}); err == nil {
		t.Fatal("head update failed, yet the write says it was done")
	}
	if commitErr != nil {
		t.Fatalf("the head was written before its shards: %v", commitErr)
	}
	if n := len(shardsOf(t, cs, DefaultLearnedScoresConfigMap)); n != 2 {
		t.Fatalf("%d shards: want both generations' after the torn write", n)
	}
	head := learnedCM(t, cs)
	got, err := ReadScoresConfigMap(head, clientShards(cs, "pal-system"))
	if err != nil || head.Annotations[AnnShardGeneration] != genA || !maps.Equal(got, a) {
		t.Fatalf("after the torn write: generation %s (want %s), error %v, equal to the first table %v",
			head.Annotations[AnnShardGeneration], genA, err, maps.Equal(got, a))
	}
	fail = false
	if err := s.putLearned(ctx, tableCSV(t, keys, b), map[string]string{}); err != nil {
		t.Fatal(err)
	}
	head = learnedCM(t, cs)
	genB := head.Annotations[AnnShardGeneration]
	got, err = ReadScoresConfigMap(head, clientShards(cs, "pal-system"))
	if err != nil || genB == genA || !maps.Equal(got, b) {
		t.Fatalf("after the next write: generation %s, error %v, equal to the second table %v", genB, err, maps.Equal(got, b))
	}
	for _, cm := range shardsOf(t, cs, DefaultLearnedScoresConfigMap) {
		if cm.Labels[LabelShardGeneration] != genB {
			t.Errorf("shard %s of generation %s left behind", cm.Name, cm.Labels[LabelShardGeneration])
		}
	}

	// A small table again: the head holds it whole, and no shard is left.
	small := allClasses("n0,0", "1.5")
	if err := s.putLearned(ctx, small, map[string]string{}); err != nil {
		t.Fatal(err)
	}
	head = learnedCM(t, cs)
	if head.Data[ScoresKey] != small || head.Annotations[AnnShards] != "" || head.Annotations[AnnShardGeneration] != "" {
		t.Errorf("small table after a sharded one: annotations %v", head.Annotations)
	}
	if n := len(shardsOf(t, cs, DefaultLearnedScoresConfigMap)); n != 0 {
		t.Errorf("%d shards left behind a whole table", n)
	}
}

// splitSmall shards a small table as a big one is sharded, for tests.
func splitSmall(t *testing.T, name, csv string, shard int) (*corev1.ConfigMap, []*corev1.ConfigMap) {
	t.Helper()
	parts, err := SplitScoresCSV(csv, 0, shard)
	if err != nil {
		t.Fatal(err)
	}
	_, ann, shards, err := ShardConfigMaps("pal-system", name, parts)
	if err != nil {
		t.Fatal(err)
	}
	head := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pal-system", Annotations: ann}, Data: map[string]string{ScoresKey: parts[0]}}
	return head, shards
}

func fourNodes() string {
	var rows []string
	for n := range 4 {
		for i := range 4 {
			rows = append(rows, fmt.Sprintf("n%d,%d", n, i), fmt.Sprintf("%.2f", 0.8+0.1*float64(n)+0.01*float64(i)))
		}
	}
	return allClasses(rows...)
}

// A shard missing, of another generation, or changed after it was
// written is an error naming the ConfigMap; a table is never read from
// two generations.
func TestShardedScoresErrors(t *testing.T) {
	csv := fourNodes()
	head, shards := splitSmall(t, "pal-variability", csv, 300)
	if len(shards) < 2 {
		t.Fatalf("%d shards", len(shards))
	}
	get := func(m map[string]*corev1.ConfigMap) shardGetter {
		return func(name string) (*corev1.ConfigMap, error) {
			if cm, ok := m[name]; ok {
				return cm, nil
			}
			return noShards(name)
		}
	}
	all := map[string]*corev1.ConfigMap{}
	for _, sh := range shards {
		all[sh.Name] = sh
	}
	want, err := ReadNodeScores("x", strings.NewReader(csv))
	if err != nil {
		t.Fatal(err)
	}
	got, err := ReadScoresConfigMap(head, get(all))
	if err != nil || !maps.Equal(got, want) {
		t.Fatalf("whole shards: error %v, %d GPUs of %d", err, len(got), len(want))
	}
	gen := head.Annotations[AnnShardGeneration]
	n := len(shards) + 1
	missing := maps.Clone(all)
	delete(missing, shards[1].Name)
	other := maps.Clone(all)
	o := shards[0].DeepCopy()
	o.Annotations[AnnShardGeneration] = "othergeneration"
	other[o.Name] = o
	edited := maps.Clone(all)
	e := shards[0].DeepCopy()
	e.Data[ScoresKey] = strings.Replace(e.Data[ScoresKey], ",A,", ",A,1", 1)
	edited[e.Name] = e
	for _, c := range []struct {
		name string
		head *corev1.ConfigMap
		m    map[string]*corev1.ConfigMap
		want string
	}{
		{"missing", head, missing, fmt.Sprintf("configmap pal-system/pal-variability-%s-2: missing; it is shard 3 of %d of the scores of configmap pal-system/pal-variability (generation %s)", gen, n, gen)},
		{"other generation", head, other, fmt.Sprintf("configmap pal-system/pal-variability-%s-1 annotation pal.io/shard-generation=\"othergeneration\": want %s, the generation of configmap pal-system/pal-variability", gen, gen)},
		{"edited", head, edited, "configmap pal-system/pal-variability: its " + fmt.Sprint(n) + " shards' content is of generation "},
		{"absurd count", withAnn(head, AnnShards, "100000000"), all, `configmap pal-system/pal-variability annotation pal.io/shards="1000...": want a count of ConfigMaps 1..1000`},
		{"count over the bound", withAnn(head, AnnShards, "5000"), all, `configmap pal-system/pal-variability annotation pal.io/shards="5000": want a count of ConfigMaps 1..1000`},
		{"count", withAnn(head, AnnShards, "2x"), all, `configmap pal-system/pal-variability annotation pal.io/shards="2x": want a count of ConfigMaps 1..1000`},
		{"generation", withAnn(head, AnnShardGeneration, "../Etc"), all, `configmap pal-system/pal-variability annotation pal.io/shard-generation="../Etc": want 1 to 63 lowercase letters and digits`},
		{"no generation", withAnn(head, AnnShardGeneration, ""), all, `configmap pal-system/pal-variability annotation pal.io/shard-generation="": want 1 to 63`},
	} {
		_, err := ReadScoresConfigMap(c.head, get(c.m))
		if err == nil || !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: error %v, want it to start %q", c.name, err, c.want)
		}
	}
}

func withAnn(cm *corev1.ConfigMap, k, v string) *corev1.ConfigMap {
	cm = cm.DeepCopy()
	cm.Annotations[k] = v
	return cm
}

// The scheduler reads a sharded profile; a change to one of its shards
// (here one deleted, the head untouched) reads it again, and a profile
// that no longer reads whole is the unreadable profile it always was:
// every GPU at the median, never a table of two generations.
func TestSchedulerReadsShardedProfile(t *testing.T) {
	csv := fourNodes()
	head, shards := splitSmall(t, "pal-variability", csv, 300)
	objs := []runtime.Object{node("n0", 4), node("n1", 4), node("n2", 4), node("n3", 4), head}
	for _, sh := range shards {
		objs = append(objs, sh)
	}
	cs, _ := newFake(t, objs...)
	s, buf := startLogged(t, testCfg(), cs)
	ctx := context.Background()
	roundWait(s, ctx, learnT0)
	if v := s.raw.Values[variability.ClassA][15]; v != 1.13 {
		t.Fatalf("n3 GPU 3 at %v, want the profile's 1.13 (from its last shard)", v)
	}
	if err := cs.CoreV1().ConfigMaps("pal-system").Delete(ctx, shards[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := s.cms.ConfigMaps("pal-system").Get(shards[0].Name); apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("informer never saw the shard go")
		}
		time.Sleep(10 * time.Millisecond)
	}
	roundWait(s, ctx, learnT0.Add(10*time.Second))
	if v := s.raw.Values[variability.ClassA][15]; v != 1 {
		t.Errorf("n3 GPU 3 at %v with a shard gone, want the median 1", v)
	}
	if !strings.Contains(buf.String(), "variability ConfigMap unreadable") || !strings.Contains(buf.String(), shards[0].Name+": missing") {
		t.Errorf("log does not tell:\n%s", buf.String())
	}
}

// A learned ConfigMap whose shard is missing is unreadable: the
// scheduler starts from the profile, as from any unreadable one.
func TestLearnedShardMissing(t *testing.T) {
	head, shards := splitSmall(t, DefaultLearnedScoresConfigMap, fourNodes(), 300)
	cs, _ := newFake(t, node("n0", 4), profileConfigMap(allClasses("n0,0", "1", "n0,1", "1", "n0,2", "0.9", "n0,3", "1")), head, shards[0])
	s, buf := startLogged(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0)
	want := "configmap pal-system/" + ShardName(DefaultLearnedScoresConfigMap, head.Annotations[AnnShardGeneration], 2) + ": missing"
	if s.learn.loadErr == nil || !strings.HasPrefix(s.learn.loadErr.Error(), want) {
		t.Fatalf("load error %v, want it to start %q", s.learn.loadErr, want)
	}
	if !strings.Contains(buf.String(), "learned scores ConfigMap unreadable") {
		t.Errorf("log does not tell:\n%s", buf.String())
	}
	if v := s.raw.Values[variability.ClassA][2]; v != 0.9 {
		t.Errorf("GPU 2 starts at %v, want the profile's 0.9", v)
	}
}

// The sharded reader: whatever a head and its shards hold gives scores
// or an error naming a ConfigMap, in bounded time, never a panic.
func FuzzReadShardedScores(f *testing.F) {
	head, shards := splitSmall(&testing.T{}, "pal-variability", fourNodes(), 300)
	f.Add(head.Annotations[AnnShards], head.Annotations[AnnShardGeneration], head.Data[ScoresKey], shards[0].Data[ScoresKey], shards[0].Annotations[AnnShardGeneration], shards[1].Data[ScoresKey])
	f.Add("2", "abc", "node,gpu_index,class,score\n", "node,gpu_index,class,score\nn0,0,A,1\n", "abc", "")
	f.Add("999999999999", "", "", "", "", "")
	f.Fuzz(func(t *testing.T, n, gen, data0, data1, gen1, data2 string) {
		head := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "pal-variability", Namespace: "pal-system",
			Annotations: map[string]string{}}, Data: map[string]string{ScoresKey: data0}}
		if n != "" {
			head.Annotations[AnnShards] = n
		}
		if gen != "" {
			head.Annotations[AnnShardGeneration] = gen
		}
		calls := 0
		get := func(name string) (*corev1.ConfigMap, error) {
			calls++
			var data string
			switch {
			case strings.HasSuffix(name, "-1"):
				data = data1
			case strings.HasSuffix(name, "-2"):
				data = data2
			default:
				return noShards(name)
			}
			return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "pal-system",
				Annotations: map[string]string{AnnShardGeneration: gen1}}, Data: map[string]string{ScoresKey: data}}, nil
		}
		_, err := ReadScoresConfigMap(head, get)
		if calls > MaxShards {
			t.Errorf("%d shard reads", calls)
		}
		if err != nil {
			if !strings.HasPrefix(err.Error(), "configmap pal-system/pal-variability") {
				t.Errorf("error %q does not name a ConfigMap", err)
			}
			if len(err.Error()) > 1024 {
				t.Errorf("error of %d bytes", len(err.Error()))
			}
		}
	})
}

// A writer that cleans up after its commit keeps the generation the head
// names now: another writer's (a replica that just lost the lead may
// still write), committed after its own.
func TestLearnedShardsKeepTheHeadsGeneration(t *testing.T) {
	ctx := context.Background()
	head, shards := splitSmall(t, DefaultLearnedScoresConfigMap, fourNodes(), 300)
	objs := []runtime.Object{head}
	for _, sh := range shards {
		objs = append(objs, sh)
	}
	cs, _ := newFake(t, objs...)
	s := startRounds(t, learnCfg(), cs)
	s.dropShards(ctx, DefaultLearnedScoresConfigMap, "othergeneration") // its own, overtaken
	got, err := ReadScoresConfigMap(learnedCM(t, cs), clientShards(cs, "pal-system"))
	if err != nil || len(got) != 16 {
		t.Fatalf("the head's generation after another writer's clean-up: %d GPUs, %v", len(got), err)
	}
}
