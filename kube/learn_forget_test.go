package kube

import (
	"context"
	"fmt"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/palsched/pal/variability"
)

// forgetStep is one round of a learnForgetAfter case: the node n1 is
// deleted or made again before it (gone, back), then a round runs at
// learnT0+at, and what is kept of n1 is checked: its rows in the learned
// ConfigMap (cmRows; the ConfigMap as the round left it), its quarantine
// there (cmQuarantine), its series on /metrics (series), and n1 device
// 2's learned 1.4 in the round's scores while n1 is in the cluster
// (believed).
type forgetStep struct {
	gone, back   bool
	cordon       bool // n1 made unschedulable: out of the layout, still a Node
	at           time.Duration
	cmRows       bool
	cmQuarantine bool
	series       bool
	believed     bool
}

// n1Series are the learned and quarantine series of node n1 on /metrics.
func n1Series(t *testing.T, s *Scheduler) []string {
	t.Helper()
	rec := httptest.NewRecorder()
	s.Handler().ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	var out []string
	for _, l := range strings.Split(rec.Body.String(), "\n") {
		if (strings.HasPrefix(l, "pal_learned_score{") || strings.HasPrefix(l, "pal_gpu_quarantined{")) && strings.Contains(l, `node="n1"`) {
			out = append(out, l)
		}
	}
	return out
}

// noteNode deletes node n1 (gone) or makes it again, and waits until the
// scheduler's informer has handed the change to its store (the next
// round's Sync takes it).
func noteNode(t *testing.T, s *Scheduler, cs *fake.Clientset, gone bool) {
	t.Helper()
	var err error
	if gone {
		err = cs.CoreV1().Nodes().Delete(context.Background(), "n1", metav1.DeleteOptions{})
	} else {
		_, err = cs.CoreV1().Nodes().Create(context.Background(), node("n1", 4), metav1.CreateOptions{})
	}
	if err != nil {
		t.Fatal(err)
	}
	waitNodeNoted(t, s, "n1", fmt.Sprintf("n1 gone=%v", gone), func(n *corev1.Node) bool { return (n == nil) == gone })
}

// waitNodeNoted waits until a change to node name that ok accepts (a nil
// node: its deletion) waits in the scheduler's store for the next round
// (see waitNoted). Counting the store's events would not do: the echo of
// a status the last round wrote may arrive first. what names the change
// for the failure.
func waitNodeNoted(t *testing.T, s *Scheduler, name, what string, ok func(*corev1.Node) bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		if n, noted := s.state.NotedNode(name); noted && ok(n) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the scheduler's store was never handed %s", what)
		}
	}
}

// cordonN1 makes node n1 unschedulable and waits until the scheduler's
// informer has handed the change to its store.
func cordonN1(t *testing.T, s *Scheduler, cs *fake.Clientset) {
	t.Helper()
	n := node("n1", 4)
	n.Spec.Unschedulable = true
	if _, err := cs.CoreV1().Nodes().Update(context.Background(), n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNodeNoted(t, s, "n1", "n1 cordoned", func(n *corev1.Node) bool { return n != nil && n.Spec.Unschedulable })
}

// learnForgetAfter: a node deleted for longer than the limit has its
// beliefs and quarantine dropped from memory, from the learned ConfigMap
// and from /metrics; one back within the limit keeps what was learned;
// limit 0 keeps everything, as before the setting; and the absence clock
// survives a restart (pal.io/absent-since), or starts at it when the
// ConfigMap was written without one.
//
// n1 device 2 is learned at 1.4 (quarantineAbove 1.3: quarantined). Its
// series leave /metrics the round the node is seen gone, not when it is
// forgotten: a frozen belief of hardware that is not there would keep
// alerts firing, and the ConfigMap keeps it for the node's return.
func TestLearnForgetAbsentNodes(t *testing.T) {
	learnedRows := allClasses("n0,0", "1", "n0,1", "1", "n0,2", "1", "n0,3", "1", "n1,0", "1", "n1,1", "1", "n1,2", "1.4", "n1,3", "1")
	const hour = time.Hour
	cases := []struct {
		name   string
		limit  time.Duration
		n1     bool              // n1 is in the cluster at the start
		ann    map[string]string // the learned ConfigMap's annotations at the start
		steps  []forgetStep
		absent string // pal.io/absent-since at the end ("-": not checked)
	}{
		{name: "deleted past the limit is forgotten", limit: hour, n1: true, steps: []forgetStep{
			{at: 0, cmRows: true, series: true, believed: true},
			{gone: true, at: time.Minute, cmRows: true, cmQuarantine: true},
			{at: hour, cmRows: true, cmQuarantine: true},
			{at: hour + 2*time.Minute},
		}, absent: ""},
		{name: "back within the limit keeps what was learned", limit: hour, n1: true, steps: []forgetStep{
			{at: 0, cmRows: true, series: true, believed: true},
			{gone: true, at: time.Minute, cmRows: true, cmQuarantine: true},
			{back: true, at: 30 * time.Minute, cmRows: true, cmQuarantine: true, series: true, believed: true},
			{at: 2 * hour, cmRows: true, cmQuarantine: true, series: true, believed: true},
		}, absent: ""},
		{name: "a cordoned node is not absent", limit: hour, n1: true, steps: []forgetStep{
			{at: 0, cmRows: true, series: true, believed: true},
			{cordon: true, at: time.Minute, cmRows: true, series: true},
			{at: 2 * hour, cmRows: true, series: true},
		}, absent: "-"},
		{name: "limit 0 never forgets", limit: 0, n1: true, steps: []forgetStep{
			{at: 0, cmRows: true, series: true, believed: true},
			{gone: true, at: time.Minute, cmRows: true, series: true},
			{at: 1000 * hour, cmRows: true, series: true},
		}, absent: "-"},
		{name: "restart: the recorded absence counts", limit: hour,
			ann: map[string]string{AnnAbsentSince: learnT0.Add(-2*hour).Format(time.RFC3339) + " n1"},
			steps: []forgetStep{
				{at: 0},
			}, absent: ""},
		{name: "restart: the recorded absence is not yet past the limit", limit: hour,
			ann: map[string]string{AnnAbsentSince: learnT0.Add(-30*time.Minute).Format(time.RFC3339) + " n1"},
			steps: []forgetStep{
				{at: 0, cmRows: true},
				{at: 29 * time.Minute, cmRows: true},
				{at: 31 * time.Minute},
			}, absent: ""},
		{name: "restart: no record, the clock starts at the restart", limit: hour,
			steps: []forgetStep{
				{at: 0, cmRows: true},
				{at: 59 * time.Minute, cmRows: true},
				{at: hour + time.Minute},
			}, absent: ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			objs := []runtime.Object{node("n0", 4), learnedConfigMap(learnedRows, tc.ann)}
			if tc.n1 {
				objs = append(objs, node("n1", 4))
			}
			cs, _ := newFake(t, objs...)
			cfg := learnCfg()
			cfg.QuarantineAbove = 1.3
			cfg.LearnForgetAfter = Duration{tc.limit}
			s := startRounds(t, cfg, cs)
			for i, st := range tc.steps {
				if st.gone || st.back {
					noteNode(t, s, cs, st.gone)
				}
				if st.cordon {
					cordonN1(t, s, cs)
				}
				roundWait(s, context.Background(), learnT0.Add(st.at))
				cm := learnedCM(t, cs)
				ns, err := ReadNodeScores("cm", strings.NewReader(cm.Data[ScoresKey]))
				if err != nil {
					t.Fatal(err)
				}
				_, rows := ns[GPUKey{"n1", 2}]
				quar := strings.Contains(cm.Annotations[AnnQuarantined], "n1/2:")
				// Both kinds: every belief of n1, and its GPU 2 quarantined.
				var scores, quarantined int
				for _, l := range n1Series(t, s) {
					if strings.HasPrefix(l, "pal_learned_score{") {
						scores++
					} else if l == `pal_gpu_quarantined{gpu="2",node="n1"} 1` {
						quarantined++
					}
				}
				series := scores == 4*variability.NumClasses && quarantined == 1
				if !series && scores+quarantined > 0 && !st.series {
					series = true // some left: that is a failure too
				}
				believed := false
				if g, ok := s.state.Snapshot().NodeIndex["n1"]; ok {
					believed = s.raw.Values[variability.ClassA][4*g+2] == 1.4
				}
				_, inMemory := s.learn.known[GPUKey{"n1", 2}]
				if rows != st.cmRows || quar != st.cmQuarantine || series != st.series || believed != st.believed || inMemory != (st.cmRows || st.believed) {
					t.Errorf("step %d (+%v): ConfigMap rows %v quarantine %v, series %v, believed %v, in memory %v; want %v %v, %v, %v, %v\n%s\nseries %q",
						i, st.at, rows, quar, series, believed, inMemory, st.cmRows, st.cmQuarantine, st.series, st.believed, st.cmRows || st.believed,
						cm.Annotations, n1Series(t, s))
				}
			}
			if got := learnedCM(t, cs).Annotations[AnnAbsentSince]; tc.absent != "-" && got != tc.absent {
				t.Errorf("%s = %q at the end, want %q", AnnAbsentSince, got, tc.absent)
			}
		})
	}
}

// A leader change: the replica that stops leading writes the absence
// clock it started (flushLearned), and one that leads next goes on from
// it, not from its own start.
func TestLearnForgetClockSurvivesLeaderChange(t *testing.T) {
	learnedRows := allClasses("n0,0", "1", "n0,1", "1", "n1,0", "1.4", "n1,1", "1")
	cs, _ := newFake(t, node("n0", 2), node("n1", 2), learnedConfigMap(learnedRows, nil))
	cfg := learnCfg()
	cfg.LearnForgetAfter = Duration{time.Hour}
	cfg.LearnedScoresWriteInterval = Duration{24 * time.Hour} // only the first write and the flush
	s := startRounds(t, cfg, cs)
	roundWait(s, context.Background(), learnT0)
	noteNode(t, s, cs, true)
	roundWait(s, context.Background(), learnT0.Add(time.Minute))
	s.flushLearned()
	want := learnT0.Add(time.Minute).Format(time.RFC3339) + " n1"
	if got := learnedCM(t, cs).Annotations[AnnAbsentSince]; got != want {
		t.Fatalf("flushed %s = %q, want %q", AnnAbsentSince, got, want)
	}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := s.cms.ConfigMaps("pal-system").Get(DefaultLearnedScoresConfigMap); err == nil && c.Annotations[AnnAbsentSince] == want {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("informer never showed the flushed ConfigMap")
		}
	}
	roundWait(s, context.Background(), learnT0.Add(30*time.Minute)) // leads again
	if _, ok := s.learn.known[GPUKey{"n1", 0}]; !ok {
		t.Fatalf("n1 forgotten 29 minutes into its absence")
	}
	s.learn.lastWrite = time.Time{} // let the next round write
	roundWait(s, context.Background(), learnT0.Add(time.Hour+2*time.Minute))
	ns, err := ReadNodeScores("cm", strings.NewReader(learnedCM(t, cs).Data[ScoresKey]))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := ns[GPUKey{"n1", 0}]; ok {
		t.Errorf("n1 still in the learned ConfigMap an hour after it left (the clock restarted with the new leader?)")
	}
}

// pal.io/absent-since: what formatAbsent writes parseAbsent reads back;
// nodes left out for size are the most recently absent; a malformed
// value is an error naming the entry.
func TestAbsentSinceAnnotation(t *testing.T) {
	t1, t2 := learnT0, learnT0.Add(time.Hour)
	in := map[string]time.Time{"b": t1, "a": t1, "c": t2}
	text := formatAbsent(in, 1<<10)
	if want := t1.Format(time.RFC3339) + " a,b; " + t2.Format(time.RFC3339) + " c"; text != want {
		t.Fatalf("formatAbsent = %q, want %q", text, want)
	}
	out, err := parseAbsent(text)
	if err != nil || len(out) != 3 || !out["a"].Equal(t1) || !out["b"].Equal(t1) || !out["c"].Equal(t2) {
		t.Errorf("parseAbsent(%q) = %v, %v", text, out, err)
	}
	if short := formatAbsent(in, len(t1.Format(time.RFC3339))+4); short != t1.Format(time.RFC3339)+" a,b" {
		t.Errorf("bounded formatAbsent = %q: want the oldest only", short)
	}
	if out, err := parseAbsent(""); err != nil || len(out) != 0 {
		t.Errorf("empty: %v %v", out, err)
	}
	for _, bad := range []string{"n1", "yesterday n1", t1.Format(time.RFC3339) + " ", t1.Format(time.RFC3339) + " a,,b", t1.Format(time.RFC3339) + " a b"} {
		if _, err := parseAbsent(bad); err == nil {
			t.Errorf("parseAbsent(%q): no error", bad)
		}
	}
	c := learnCfg()
	c.LearnForgetAfter = Duration{-time.Second}
	if err := c.Validate(); err == nil || !strings.Contains(err.Error(), "field learnForgetAfter") {
		t.Errorf("negative learnForgetAfter: %v", err)
	}
	if d := DefaultConfig(); d.LearnForgetAfter.Duration != DefaultLearnForgetAfter {
		t.Errorf("default learnForgetAfter %v", d.LearnForgetAfter)
	}
}

// Between sweeps a round's forgetAbsent is two comparisons: no
// allocation, whatever the learned state holds (the sweep itself runs
// when the usable nodes change, or once a minute).
func TestForgetAbsentBetweenSweepsAllocs(t *testing.T) {
	cfg := learnCfg()
	cfg.LearnForgetAfter = Duration{time.Hour}
	s := &Scheduler{cfg: cfg, learn: newLearnStage()}
	for i := range 1000 {
		s.learn.known[GPUKey{"gone-" + strconv.Itoa(i), 0}] = [variability.NumClasses]float64{1, 1, 1, 1}
	}
	snap := &snapshot{LayoutGeneration: 7}
	s.learn.sweptLayout, s.learn.sweptAt = 7, learnT0
	now := learnT0.Add(30 * time.Second)
	if a := testing.AllocsPerRun(100, func() { s.forgetAbsent(snap, now) }); a != 0 {
		t.Errorf("forgetAbsent between sweeps: %v allocs, want 0", a)
	}
	if len(s.learn.absent) != 0 {
		t.Errorf("swept between sweeps: %v", s.learn.absent)
	}
}

// pal.io/absent-since from any value: a short error, or clocks that
// write back as they were read (to the second, as they are written).
func FuzzParseAbsent(f *testing.F) {
	f.Add("2026-03-01T12:00:00Z n1,n2; 2026-03-02T00:00:00Z n3")
	f.Add("")
	f.Add("2026-03-01T12:00:00.5+01:00 n1")
	f.Add("0000-01-01T00:00:00+01:00 n1")
	f.Add("2026-03-01T12:00:00Z n1;2026-03-01T12:00:00Z n2")
	f.Fuzz(func(t *testing.T, v string) {
		got, err := parseAbsent(v)
		if err != nil {
			if n := len(err.Error()); n > 1024 {
				t.Errorf("error of %d bytes: %.300s", n, err)
			}
			return
		}
		text := formatAbsent(got, len(v)+64*len(got)+1)
		back, err := parseAbsent(text)
		if err != nil {
			t.Fatalf("%q read as %v, written as %q, which does not read back: %v", v, got, text, err)
		}
		if len(back) != len(got) {
			t.Fatalf("%q read as %d clocks, written and read back as %d", v, len(got), len(back))
		}
		for n, at := range got {
			if b, ok := back[n]; !ok || b.Unix() != at.Unix() {
				t.Errorf("%q: %s absent since %v, written and read back as %v", v, n, at, b)
			}
		}
	})
}
