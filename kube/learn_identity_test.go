package kube

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
)

// idNode is node NAME of 4 GPUs whose kubelet reports the system UUID
// and machine ID given ("" for none).
func idNode(name, uuid, machine string) *corev1.Node {
	n := node(name, 4)
	n.Status.NodeInfo.SystemUUID, n.Status.NodeInfo.MachineID = uuid, machine
	return n
}

// setNode makes node n1 be n: created (it was deleted, as a drain,
// delete and rejoin does), else updated in place (as a kubelet on a new
// machine takes over the Node object of its name); and waits until the
// scheduler's informer has handed the change to its store.
func setNode(t *testing.T, s *Scheduler, cs *fake.Clientset, n *corev1.Node, create bool) {
	t.Helper()
	ctx := context.Background()
	var err error
	if create {
		_, err = cs.CoreV1().Nodes().Create(ctx, n, metav1.CreateOptions{})
	} else {
		_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	waitNodeNoted(t, s, "n1", "n1's change", func(x *corev1.Node) bool { return x != nil })
}

// A reused node name: what was learned of a node's GPUs is dropped when a
// node of that name reports another hardware identity (its system UUID,
// else its machine ID), and kept when it reports the same one, or none.
//
// n1 device 2 is learned at 1.4 and quarantined (quarantineAbove 1.3;
// the ConfigMap says so).
// After the cases' change (then), a round runs; what is checked is n1
// device 2's 1.4 in memory, in the round's believed values and in the
// learned ConfigMap, its quarantine there and its quarantine series on
// /metrics, and the NodeIdentityChanged event on n1. A dropped node's
// GPUs start again from the profile (1).
func TestLearnNodeIdentity(t *testing.T) {
	learnedRows := allClasses("n0,0", "1", "n0,1", "1", "n0,2", "1", "n0,3", "1", "n1,0", "1", "n1,1", "1", "n1,2", "1.4", "n1,3", "1")
	uuidA, uuidB := "ec2a0e4b-1d2c-4f5e-8a9b-0c1d2e3f4a5b", "ec2f7788-9a0b-4c1d-8e2f-3a4b5c6d7e8f"
	recorded := func(n1 string) map[string]string {
		return map[string]string{AnnNodeIDs: formatNodeIDs(map[string]string{"n0": nodeIdentity(idNode("n0", "n0-uuid", "")), "n1": n1}, nodeIDsBytes)}
	}
	cases := []struct {
		name  string
		limit time.Duration     // learnForgetAfter
		ann   map[string]string // the learned ConfigMap's annotations at the start
		start *corev1.Node      // n1 at the start
		then  *corev1.Node      // n1 after the first round (nil: unchanged)
		del   bool              // then comes by delete and create
		kept  bool              // what was learned of n1 is kept
		ids   string            // n1's entry in pal.io/node-ids at the end
	}{
		{name: "same name, new system UUID, in place", start: idNode("n1", uuidA, "m1"), then: idNode("n1", uuidB, "m1"),
			ids: nodeIdentity(idNode("n1", uuidB, ""))},
		{name: "same name, new system UUID, deleted and made again", start: idNode("n1", uuidA, "m1"), then: idNode("n1", uuidB, "m2"), del: true,
			ids: nodeIdentity(idNode("n1", uuidB, ""))},
		{name: "new system UUID with learnForgetAfter 0", limit: -1, start: idNode("n1", uuidA, ""), then: idNode("n1", uuidB, ""),
			ids: nodeIdentity(idNode("n1", uuidB, ""))},
		{name: "restart: the recorded identity is another machine's", ann: recorded(nodeIdentity(idNode("n1", uuidA, ""))), start: idNode("n1", uuidB, ""),
			ids: nodeIdentity(idNode("n1", uuidB, ""))},
		{name: "restart: the same system UUID is kept", ann: recorded(nodeIdentity(idNode("n1", uuidA, ""))), start: idNode("n1", uuidA, "m9"),
			kept: true, ids: nodeIdentity(idNode("n1", uuidA, ""))},
		{name: "drain, delete and rejoin of the same machine is kept", start: idNode("n1", uuidA, "m1"), then: idNode("n1", uuidA, "m1"), del: true,
			kept: true, ids: nodeIdentity(idNode("n1", uuidA, ""))},
		{name: "machine ID when there is no system UUID: changed", start: idNode("n1", "", "m1"), then: idNode("n1", "", "m2"),
			ids: nodeIdentity(idNode("n1", "", "m2"))},
		{name: "machine ID when there is no system UUID: same across a restart", ann: recorded(nodeIdentity(idNode("n1", "", "m1"))), start: idNode("n1", "", "m1"),
			kept: true, ids: nodeIdentity(idNode("n1", "", "m1"))},
		{name: "no system UUID nor machine ID: no check", ann: recorded(nodeIdentity(idNode("n1", uuidA, ""))), start: idNode("n1", "", ""), then: idNode("n1", "", ""), del: true,
			kept: true, ids: nodeIdentity(idNode("n1", uuidA, ""))},
		{name: "a system UUID where a machine ID was recorded: no check", ann: recorded(nodeIdentity(idNode("n1", "", "m1"))), start: idNode("n1", uuidA, "m1"),
			kept: true, ids: nodeIdentity(idNode("n1", uuidA, ""))},
		{name: "old ConfigMap without the annotation: kept and recorded", start: idNode("n1", uuidA, ""),
			kept: true, ids: nodeIdentity(idNode("n1", uuidA, ""))},
		{name: "malformed annotation: kept and recorded", ann: map[string]string{AnnNodeIDs: "n1"}, start: idNode("n1", uuidB, ""),
			kept: true, ids: nodeIdentity(idNode("n1", uuidB, ""))},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ann := map[string]string{AnnQuarantined: "n1/2: slowdown 1.4 (learned) since " + learnT0.Add(-time.Hour).Format(time.RFC3339)}
			maps.Copy(ann, tc.ann)
			cs, _ := newFake(t, idNode("n0", "n0-uuid", ""), tc.start, learnedConfigMap(learnedRows, ann))
			cfg := learnCfg()
			cfg.QuarantineAbove = 1.3
			if tc.limit < 0 {
				cfg.LearnForgetAfter = Duration{}
			}
			s := startRounds(t, cfg, cs)
			evc := fake.NewSimpleClientset()
			s.UseEventClient(evc)
			ctx := context.Background()
			s.events.Start(ctx)
			defer s.Stop()
			roundWait(s, ctx, learnT0)
			if tc.then != nil {
				if tc.del {
					noteNode(t, s, cs, true) // a round finds it gone
					roundWait(s, ctx, learnT0.Add(time.Minute))
				}
				setNode(t, s, cs, tc.then, tc.del)
				roundWait(s, ctx, learnT0.Add(2*time.Minute))
			}
			cm := learnedCM(t, cs)
			ns, err := ReadNodeScores("cm", strings.NewReader(cm.Data[ScoresKey]))
			if err != nil {
				t.Fatal(err)
			}
			k := GPUKey{"n1", 2}
			inCM := ns[k][0] == 1.4
			quar := strings.Contains(cm.Annotations[AnnQuarantined], "n1/2:")
			inMemory := s.learn.known[k][0] == 1.4
			_, inQuarantine := s.learn.quarantined[k]
			believed := false
			if g, ok := s.state.Snapshot().NodeIndex["n1"]; ok {
				believed = s.raw.Values[0][4*g+2] == 1.4
			}
			gauge := testutil.ToFloat64(s.metrics.learn.quarantined.WithLabelValues("n1", "2")) == 1
			s.events.Stop()
			event := ""
			for _, ev := range listEvents(t, evc, "default") {
				if ev.Reason == ReasonNodeIdentityChanged {
					event = ev.Regarding.Kind + "/" + ev.Regarding.Name + ": " + ev.Note
				}
			}
			if inCM != tc.kept || quar != tc.kept || inMemory != tc.kept || inQuarantine != tc.kept || believed != tc.kept || gauge != tc.kept || (event == "") != tc.kept {
				t.Errorf("n1 device 2: 1.4 in the ConfigMap %v, quarantined there %v, in memory %v, in quarantine %v, believed %v, gauge 1 %v, event %q; want kept=%v\n%v",
					inCM, quar, inMemory, inQuarantine, believed, gauge, event, tc.kept, cm.Annotations)
			}
			if !tc.kept && (!strings.HasPrefix(event, "Node/n1: ") || !strings.Contains(event, "dropped")) {
				t.Errorf("event %q: want one on Node/n1 that says what was learned of it is dropped", event)
			}
			if !tc.kept && ns[k][0] != 1 {
				t.Errorf("n1 device 2 written at %v, want the profile's 1", ns[k][0])
			}
			got, err := parseNodeIDs(cm.Annotations[AnnNodeIDs])
			if err != nil || got["n1"] != tc.ids || got["n0"] != nodeIdentity(idNode("n0", "n0-uuid", "")) {
				t.Errorf("%s = %q (%v): want n1 recorded as %q, and n0", AnnNodeIDs, cm.Annotations[AnnNodeIDs], err, tc.ids)
			}
		})
	}
}

// pal.io/node-ids: what formatNodeIDs writes parseNodeIDs reads back,
// names sorted; nodes the bound leaves out are the last by name; a
// malformed value is an error. A node's identity is a digest of its
// system UUID (u:), else of its machine ID (m:), and "" with neither.
func TestNodeIDsAnnotation(t *testing.T) {
	a, b := nodeIdentity(idNode("a", "uuid-a", "m")), nodeIdentity(idNode("b", "", "m"))
	if !strings.HasPrefix(a, "u:") || !strings.HasPrefix(b, "m:") || len(a) != len(b) || nodeIdentity(idNode("c", "", "")) != "" {
		t.Fatalf("identities %q %q %q", a, b, nodeIdentity(idNode("c", "", "")))
	}
	if a == nodeIdentity(idNode("a", "uuid-b", "m")) || a != nodeIdentity(idNode("x", "uuid-a", "other")) {
		t.Errorf("the identity is the system UUID's alone")
	}
	in := map[string]string{"b": b, "a": a}
	text := formatNodeIDs(in, 1<<10)
	if want := "a=" + a + ",b=" + b; text != want {
		t.Fatalf("formatNodeIDs = %q, want %q", text, want)
	}
	out, err := parseNodeIDs(text)
	if err != nil || len(out) != 2 || out["a"] != a || out["b"] != b {
		t.Errorf("parseNodeIDs(%q) = %v, %v", text, out, err)
	}
	if short := formatNodeIDs(in, len("a="+a)+1); short != "a="+a {
		t.Errorf("bounded formatNodeIDs = %q: want a only", short)
	}
	if out, err := parseNodeIDs(""); err != nil || len(out) != 0 {
		t.Errorf("empty: %v %v", out, err)
	}
	for _, bad := range []string{"n1", "n1=", "=u:abc", "n1=x:abcdefgh", "n1=u:abc", "n1=" + a + ",,b=" + b, "n 1=" + a, "n1=" + a + ",n1=" + b} {
		if _, err := parseNodeIDs(bad); err == nil {
			t.Errorf("parseNodeIDs(%q): no error", bad)
		}
	}
}

// The identity check runs when a node is added or its system UUID or
// machine ID changes (the store's NodeInfoGeneration), not every round:
// a round that finds neither costs one comparison and no allocation.
func TestNodeIdentityBetweenChangesAllocs(t *testing.T) {
	cs, _ := newFake(t, idNode("n0", "u0", ""), idNode("n1", "u1", ""), learnedConfigMap(allClasses("n0,0", "1", "n1,0", "1.4"), nil))
	s := startRounds(t, learnCfg(), cs)
	roundWait(s, context.Background(), learnT0)
	if a := testing.AllocsPerRun(100, func() { s.learnNodeIDs() }); a != 0 {
		t.Errorf("learnNodeIDs with no node change: %v allocs, want 0", a)
	}
	if len(s.learn.ids) != 2 {
		t.Errorf("identities %v, want n0's and n1's", s.learn.ids)
	}
}

// Scheduler.told (the nodes warned that they have no PM-score) loses a
// node once it has no Node object: it does not grow with every name ever
// seen, and a node that comes back under that name is warned again.
func TestToldForgetsDeletedNodes(t *testing.T) {
	objs := []runtime.Object{node("n0", 4), node("n1", 4)}
	cs, _ := newFake(t, objs...)
	cfg := DefaultConfig()
	cfg.LeaderElection.Enabled = false
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), learnT0)
	if !s.told["n0"] || !s.told["n1"] {
		t.Fatalf("told %v, want n0 and n1", s.told)
	}
	noteNode(t, s, cs, true)
	roundWait(s, context.Background(), learnT0.Add(time.Minute))
	if s.told["n1"] || !s.told["n0"] || len(s.told) != 1 {
		t.Errorf("told %v after n1 was deleted, want n0 alone", s.told)
	}
}

// pal.io/node-ids read from any value: an error of bounded size, or
// identities that formatNodeIDs writes back as parseNodeIDs read them.
func FuzzParseNodeIDs(f *testing.F) {
	a := nodeIdentity(idNode("a", "uuid-a", ""))
	f.Add("a=" + a + ",b=" + nodeIdentity(idNode("b", "", "m")))
	f.Add("")
	f.Add("a=u:abc,a=" + a)
	f.Add("a=" + a + ",,")
	f.Fuzz(func(t *testing.T, v string) {
		ids, err := parseNodeIDs(v)
		if err != nil {
			if n := len(err.Error()); n > 1024 {
				t.Errorf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		back, err := parseNodeIDs(formatNodeIDs(ids, len(v)+1))
		if err != nil || !maps.Equal(back, ids) {
			t.Errorf("%q read as %v, written and read back as %v, %v", v, ids, back, err)
		}
	})
}
