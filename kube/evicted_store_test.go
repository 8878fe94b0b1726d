package kube

import (
	"context"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/palsched/pal/workload"
)

// A gang evicted by one scheduler, whose controller makes its pods again
// only after the scheduler is gone (a restart, or another replica
// leading), is credited the work it had done by the next one: the
// record lives in the evicted-work ConfigMap. LAS on one 4-GPU node,
// rounds 100 s apart, a unit model: a runs from 0, b takes the node at
// 300, a is evicted; the scheduler is replaced while a has no pod; a's
// new pod (a new name) must be placed again with its done (>= 200), and
// LAS must read it as served, so b keeps the node until it has attained
// as much.
func TestEvictedWorkAcrossRestart(t *testing.T) {
	for _, c := range evictedCases() {
		t.Run(c.name, func(t *testing.T) {
			w, t0 := lasWorld(t)
			ann := c.ann
			w.createWith("a", 4, ann("ga"), t0, c.owners)
			var evicted []*corev1.Pod
			r := 0
			for ; r <= 6 && evicted == nil; r++ {
				at := t0.Add(time.Duration(r) * 100 * time.Second)
				if r == 3 {
					w.create("b", 4, ann("gb"), at.Add(-50*time.Second))
				}
				w.deliver(-1)
				w.round(at)
				w.deliver(-1)
				evicted = w.deleting()
			}
			if len(evicted) != 1 {
				t.Fatalf("evicted %d pods by round %d, want a's", len(evicted), r)
			}
			cm, err := w.cs.CoreV1().ConfigMaps(w.s.cfg.Namespace).Get(context.Background(), DefaultEvictedWorkConfigMap, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("the evicted-work ConfigMap after a's eviction: %v", err)
			}
			m, bad, _, err := parseEvictedWork("cm", cm.Data[EvictedWorkKey], time.Now(), time.Hour)
			if err != nil || bad != 0 || len(m) != 1 {
				t.Fatalf("the ConfigMap holds %v (bad %d, err %v), want a's record alone:\n%s", m, bad, err, cm.Data[EvictedWorkKey])
			}
			for _, e := range m {
				if !(e.executed >= 200) {
					t.Fatalf("a's record says executed %v, want at least 200", e.executed)
				}
			}
			if g, ok := testutil.ToFloat64(w.s.metrics.EvictedWork), testutil.ToFloat64(w.s.metrics.EvictedWorkWrites.WithLabelValues("ok")); g != 1 || ok < 1 {
				t.Errorf("pal_evicted_work_gangs %v and pal_evicted_work_writes_total{result=ok} %v after a's eviction, want 1 and at least 1", g, ok)
			}
			w.remove(evicted[0].Namespace + "/" + evicted[0].Name)
			w.deliver(-1)

			// A new scheduler: what the old one credited a lived only
			// in its memory and the ConfigMap.
			w.restart()
			s := w.s
			n := evicted[0].DeepCopy()
			n.Name += "x"
			w.recreate(n)

			// pal-kube forecast, a process of its own that runs no
			// round, reads the record too: a's new pod is a queued job
			// that has done its work.
			f, err := New(w.s.cfg, w.cs, slog.New(slog.NewTextHandler(w.log, nil)))
			if err != nil {
				t.Fatal(err)
			}
			w.s = f
			w.relist()
			st, err := f.Forecast(t0.Add(time.Duration(r) * 100 * time.Second))
			if err != nil {
				t.Fatal(err)
			}
			var fa *workload.Job
			for _, g := range st.Pending {
				if g.GPUs == 4 && strings.Contains(g.key, "a") && !strings.Contains(g.key, "b") {
					for _, j := range st.Jobs {
						if j.ID == g.JobID {
							fa = j
						}
					}
				}
			}
			if fa == nil || !(fa.Executed >= 200) || fa.Attained != 300 {
				t.Errorf("the forecast's queued a: %+v; want it credited its record (executed >= 200, attained 300)", fa)
			}
			w.s = s
			w.relist()

			var rebound *BindInfo
			rebindRound := 0
			for ; r <= 16 && rebound == nil; r++ {
				at := t0.Add(time.Duration(r) * 100 * time.Second)
				w.recreateDeleted() // b, when a takes the node back
				w.deliver(-1)
				w.round(at)
				w.deliver(-1)
				if rebound = w.boundInfo("ax"); rebound != nil {
					rebindRound = r
				}
			}
			if rebound == nil {
				t.Fatal("a was not placed again within 16 rounds")
			}
			if !(rebound.Done >= 200) {
				t.Errorf("a placed again by a new scheduler; its bind-info records done %v, want the iterations it had run (at least 200)", rebound.Done)
			}
			// b is bound by the new scheduler's first round (4) and
			// attains 100 s a round: a, with its 300 s, goes ahead of
			// it at round 7 and is bound at 8, once b's pod is gone.
			// Read as never served it would go ahead at 5.
			if rebindRound != 8 {
				t.Errorf("a placed again at round %d, want 8, once b had attained a's 300 s (LAS reads a as never served if earlier)", rebindRound)
			}
		})
	}
}

func TestEvictedWorkFormat(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	rec := func(x, a, sv float64, owner types.UID, at time.Time) evictedWork {
		return evictedWork{executed: x, attained: a, service: sv, owner: owner, at: at, seen: at, saved: at}
	}
	m := map[string]evictedWork{
		"ns/g1":          rec(100, 50, 200, "u1", now.Add(-time.Minute)),
		"job-uid:abc":    rec(7.5, 7.5, 7.5, "abc", now.Add(-2*time.Minute)),
		"ns/pod:oldest":  rec(1, 1, 1, "u3", now.Add(-50*time.Minute)),
		"ns/pod:expired": rec(1, 1, 1, "u4", now.Add(-2*time.Hour)),
		"ns/pod:waiting": {executed: 1, attained: 1, service: 1, owner: "u5", at: now.Add(-3 * time.Hour), seen: now.Add(-5 * time.Minute), saved: now.Add(-5 * time.Minute), arrived: now.Add(-4 * time.Hour), debt: 120, promise: now.Add(time.Hour), bound: now.Add(-210 * time.Minute)},
	}
	data, dropped := formatEvictedWork(m, 1<<20)
	if dropped != 0 {
		t.Fatalf("dropped %d with room for all", dropped)
	}
	got, bad, _, err := parseEvictedWork("cm", data, now, time.Hour)
	if err != nil || bad != 0 {
		t.Fatalf("parse: %v, bad %d:\n%s", err, bad, data)
	}
	if len(got) != 4 || got["ns/g1"] != m["ns/g1"] || got["job-uid:abc"] != m["job-uid:abc"] || got["ns/pod:oldest"] != m["ns/pod:oldest"] || got["ns/pod:waiting"] != m["ns/pod:waiting"] {
		t.Errorf("read back %v, want every record but the expired one as written (one evicted 3 h ago and seen waiting 5 min ago is kept)", got)
	}
	// Past the limit the oldest go first.
	one, _ := formatEvictedWork(map[string]evictedWork{"ns/g1": m["ns/g1"]}, 1<<20)
	data, dropped = formatEvictedWork(m, len(one))
	got, _, _, _ = parseEvictedWork("cm", data, now, 3*time.Hour)
	if dropped != 4 || len(got) != 1 || got["ns/g1"] != m["ns/g1"] {
		t.Errorf("with room for one record: kept %v, dropped %d; want the newest (ns/g1) kept and 4 dropped", got, dropped)
	}
}

// A record's arrival, and the round that last bound its gang, are kept
// only where a scheduler could have written them: one after the eviction
// is dropped, and the record's work is still kept.
func TestEvictedWorkDropsLateArrival(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := now.Add(-time.Minute)
	for _, c := range []struct {
		name           string
		arrived, wantA time.Time
	}{
		{"before the eviction", at.Add(-time.Hour), at.Add(-time.Hour)},
		{"at the eviction", at, at},
		{"after the eviction", at.Add(time.Second), time.Time{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			data, _ := formatEvictedWork(map[string]evictedWork{"ns/g": {executed: 5, owner: "u", at: at, seen: at, saved: at, arrived: c.arrived, bound: c.arrived}}, 1<<20)
			m, bad, _, err := parseEvictedWork("cm", data, now, time.Hour)
			if err != nil || bad != 0 {
				t.Fatalf("parse: %v, bad %d", err, bad)
			}
			e, ok := m["ns/g"]
			if !ok || e.executed != 5 {
				t.Fatalf("record %+v (found %v), want its work kept", e, ok)
			}
			if !e.arrived.Equal(c.wantA) || !e.bound.Equal(c.wantA) {
				t.Errorf("arrived %v, bound %v; want %v", e.arrived, e.bound, c.wantA)
			}
		})
	}
}

func TestEvictedWorkParseErrors(t *testing.T) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	at := now.Add(-time.Minute).Format(time.RFC3339)
	rec := func(fields string) string {
		return `{"version":1,"gangs":[{"gang":"ns/g","owner":"u","executed":1,"attained":1,"service":1,"at":"` + at + `"},` + fields + `]}`
	}
	for _, c := range []struct {
		name, data, err, first string
		bad, n                 int
	}{
		{name: "not JSON", data: "gang,owner\n", err: "cm: key work.json: invalid character"},
		// A field this version does not know is a newer scheduler's: read
		// past (evictedUnknown names it for a warning), so that a rollback
		// keeps the records.
		{name: "unknown field", data: `{"version":1,"gangz":[]}`},
		{name: "a newer version's field in a record", data: rec(`{"gang":"ns/h","owner":"u","executed":2,"attained":1,"service":1,"at":"` + at + `","future":{"x":[1]}}`), n: 2},
		{name: "another version", data: `{"version":2,"gangs":[]}`, err: "field version: 2, want 1"},
		{name: "no version", data: `{"gangs":[]}`, err: "field version: 0, want 1"},
		{name: "too many", data: `{"version":1,"gangs":[` + strings.Repeat(`{},`, evictedWorkRecords) + `{}]}`, err: "field gangs: 16385 records, at most 16384"},
		{name: "negative work", data: rec(`{"gang":"ns/h","owner":"u","executed":-1,"attained":1,"service":1,"at":"` + at + `"}`), bad: 1, n: 1,
			first: `cm: key work.json: gangs[1] ("ns/h"): field executed: -1, want a finite number >= 0`},
		{name: "no owner", data: rec(`{"gang":"ns/h","executed":1,"attained":1,"service":1,"at":"` + at + `"}`), bad: 1, n: 1,
			first: "gangs[1] (\"ns/h\"): field owner: empty"},
		{name: "negative debt", data: rec(`{"gang":"ns/h","owner":"u","executed":1,"attained":1,"service":1,"debt":-5,"at":"` + at + `"}`), bad: 1, n: 1,
			first: "field debt: -5, want a finite number >= 0"},
		{name: "no time", data: rec(`{"gang":"ns/h","owner":"u","executed":1,"attained":1,"service":1}`), bad: 1, n: 1, first: "field at: missing"},
		{name: "overlong gang", data: rec(`{"gang":"` + strings.Repeat("x", 2000) + `","owner":"u","at":"` + at + `"}`), bad: 1, n: 1, first: "field gang: empty or longer than 1024 bytes"},
		{name: "listed twice: the newer stands", data: rec(`{"gang":"ns/g","owner":"u","executed":9,"attained":1,"service":1,"at":"` + now.Format(time.RFC3339) + `"}`), n: 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			m, bad, first, err := parseEvictedWork("cm", c.data, now, time.Hour)
			if c.err != "" {
				if err == nil || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("err %v, want one containing %q", err, c.err)
				}
				if len(err.Error()) > 400 {
					t.Errorf("error of %d bytes: %.100s...", len(err.Error()), err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if bad != c.bad || len(m) != c.n || !strings.Contains(first, c.first) {
				t.Errorf("bad %d (%q), %d records; want bad %d (%q), %d", bad, first, len(m), c.bad, c.first, c.n)
			}
			if u := evictedUnknown("cm", c.data); strings.Contains(c.name, "field") != strings.Contains(u, "unknown field") {
				t.Errorf("evictedUnknown: %q", u)
			}
			if c.name == "a newer version's field in a record" && m["ns/h"].executed != 2 {
				t.Errorf("ns/h executed %v, want 2", m["ns/h"].executed)
			}
			if c.name == "listed twice: the newer stands" && m["ns/g"].executed != 9 {
				t.Errorf("ns/g executed %v, want the newer record's 9", m["ns/g"].executed)
			}
		})
	}
}

// An unreadable ConfigMap costs its records, not the scheduler: the
// first round says so and goes on, and the next write replaces it.
func TestEvictedWorkUnreadableReplaced(t *testing.T) {
	cfg := testCfg()
	w := newWorld(t, cfg, 1, 1, 4)
	ctx := context.Background()
	_, err := w.cs.CoreV1().ConfigMaps(cfg.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultEvictedWorkConfigMap, Namespace: cfg.Namespace},
		Data:       map[string]string{EvictedWorkKey: "{not json"},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.deliver(-1)
	w.round(time.Unix(1_000_000, 0))
	if !strings.Contains(w.log.String(), "evicted gangs' work unreadable") {
		t.Errorf("the log does not say the ConfigMap is unreadable:\n%s", w.log.String())
	}
	cm, err := w.cs.CoreV1().ConfigMaps(cfg.Namespace).Get(ctx, DefaultEvictedWorkConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, err := parseEvictedWork("cm", cm.Data[EvictedWorkKey], time.Now(), time.Hour); err != nil {
		t.Errorf("after the first round the ConfigMap is still unreadable (%v): %q", err, cm.Data[EvictedWorkKey])
	}
}

// A newer scheduler's ConfigMap, with a field this version does not know,
// rolled back to this one: its records are restored and the field named
// in a warning (a version that refused the whole file replaced every
// record at its next write).
func TestEvictedWorkNewerFieldsRestored(t *testing.T) {
	cfg := testCfg()
	w := newWorld(t, cfg, 1, 1, 4)
	ctx := context.Background()
	at := time.Now().Add(-time.Minute).UTC().Format(time.RFC3339)
	data := `{"version":1,"gangs":[{"gang":"ns/g","owner":"u","executed":7,"attained":3,"service":5,"at":"` + at + `","checkpoint":"s3://x"}]}`
	_, err := w.cs.CoreV1().ConfigMaps(cfg.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultEvictedWorkConfigMap, Namespace: cfg.Namespace},
		Data:       map[string]string{EvictedWorkKey: data},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w.deliver(-1)
	w.round(time.Unix(1_000_000, 0))
	if e, ok := w.s.evictedWork["ns/g"]; !ok || e.executed != 7 {
		t.Errorf("ns/g restored %v (%+v), want executed 7\n%s", ok, e, w.log.String())
	}
	if !strings.Contains(w.log.String(), `fields this version does not know were ignored`) || !strings.Contains(w.log.String(), `unknown field \"checkpoint\"`) {
		t.Errorf("the log does not name the unknown field:\n%s", w.log.String())
	}
}

func TestEvictedWorkConfigMapValidated(t *testing.T) {
	for _, field := range []string{"variabilityConfigMap", "learnedScoresConfigMap", "cellsConfigMap"} {
		cfg := DefaultConfig()
		cfg.CellsConfigMap = "cells"
		switch field {
		case "variabilityConfigMap":
			cfg.EvictedWorkConfigMap = cfg.VariabilityConfigMap
		case "learnedScoresConfigMap":
			cfg.EvictedWorkConfigMap = cfg.LearnedScoresConfigMap
		default:
			cfg.EvictedWorkConfigMap = "cells"
		}
		err := cfg.validateEvictedWork() // Validate refuses cellsConfigMap without a tenancy first
		if err == nil || !strings.Contains(err.Error(), "field evictedWorkConfigMap") || !strings.Contains(err.Error(), field) {
			t.Errorf("evictedWorkConfigMap equal to %s: err %v, want one naming both fields", field, err)
		}
	}
	cfg := DefaultConfig()
	cfg.EvictedWorkConfigMap = ""
	if err := cfg.Validate(); err != nil {
		t.Errorf("evictedWorkConfigMap empty (kept in memory only): %v", err)
	}
	cfg = DefaultConfig()
	cfg.EvictedWorkWriteInterval.Duration = -time.Second
	if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), "field evictedWorkWriteInterval") {
		t.Errorf("evictedWorkWriteInterval -1s: err %v, want one naming the field", err)
	}
}

func FuzzParseEvictedWork(f *testing.F) {
	now := time.Date(2026, 12, 6, 12, 0, 0, 0, time.UTC)
	good, _ := formatEvictedWork(map[string]evictedWork{"ns/g": {executed: 1, attained: 2, service: 3, owner: types.UID("u"), at: now, seen: now, saved: now}}, 1<<20)
	f.Add(good)
	f.Add(`{"version":1,"gangs":[{"gang":"","owner":"u","executed":1e308,"at":"2026-12-06T12:00:00Z"}]}`)
	f.Add("")
	f.Fuzz(func(t *testing.T, data string) {
		if len(data) > 1<<20 {
			return // a ConfigMap holds at most 1 MiB
		}
		m, bad, first, err := parseEvictedWork("cm", data, now, time.Hour)
		if err != nil {
			if len(err.Error()) > 600 {
				t.Fatalf("error of %d bytes", len(err.Error()))
			}
			return
		}
		if len(first) > 1600 || (bad > 0) != (first != "") {
			t.Fatalf("bad %d, first %d bytes", bad, len(first))
		}
		for k, e := range m {
			if k == "" || e.owner == "" || !workFigure(e.executed) || !workFigure(e.attained) || !workFigure(e.service) || math.IsNaN(e.executed) {
				t.Fatalf("accepted %q: %+v", k, e)
			}
		}
		// What is accepted is written back the same.
		again, _ := formatEvictedWork(m, 1<<30)
		m2, bad2, _, err := parseEvictedWork("cm", again, now, time.Hour)
		if err != nil || bad2 != 0 || len(m2) != len(m) {
			t.Fatalf("written back: %v, bad %d, %d of %d records", err, bad2, len(m2), len(m))
		}
		for k, e := range m {
			if e2 := m2[k]; e2.owner != e.owner || e2.executed != e.executed || !e2.at.Equal(e.at) {
				t.Fatalf("%q read back as %+v, want %+v", k, e2, e)
			}
		}
	})
}

// A ConfigMap that cannot be written (here its namespace is missing, as
// for a single replica run without pal-system) is retried after each
// round that changed the records, and said once until a write succeeds
// again: every round saying it buried the log.
func TestEvictedWorkWriteFailureSaidOnce(t *testing.T) {
	w := newWorld(t, testCfg(), 1, 1, 4)
	s := w.s
	fail := true
	w.cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fail {
			return true, nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, "pal-system")
		}
		return false, nil, nil
	})
	s.restoreEvictedWork(context.Background(), true) // a term's first round reads (nothing there)
	t0, every := time.Now(), s.cfg.EvictedWorkWriteInterval.Duration
	for i := range 3 {
		s.evictedWork[fmt.Sprintf("ns/g%d", i)] = evictedWork{executed: 100, attained: 100, service: 400, owner: "u", at: time.Now(), seen: time.Now(), saved: time.Now()}
		s.evicted.dirty = true
		s.saveEvictedWork(context.Background(), t0.Add(time.Duration(i)*every))
		s.settleEvicted(true)
	}
	said := strings.Count(w.log.String(), "evicted gangs' work not written")
	if errs := testutil.ToFloat64(s.metrics.EvictedWorkWrites.WithLabelValues("error")); said != 1 || errs != 3 {
		t.Errorf("3 failed writes: said %d times, counted %v; want said once, counted 3", said, errs)
	}
	fail = false
	s.saveEvictedWork(context.Background(), t0.Add(3*every)) // still owed: the failure left it dirty
	s.settleEvicted(true)
	if !strings.Contains(w.log.String(), "evicted gangs' work written again") || testutil.ToFloat64(s.metrics.EvictedWorkWrites.WithLabelValues("ok")) != 1 {
		t.Errorf("the write after the namespace came: not said, or not counted ok:\n%s", w.log.String())
	}
	cm, err := w.cs.CoreV1().ConfigMaps(s.cfg.Namespace).Get(context.Background(), DefaultEvictedWorkConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _, err := parseEvictedWork("cm", cm.Data[EvictedWorkKey], time.Now(), time.Hour); err != nil || len(m) != 3 {
		t.Errorf("the ConfigMap holds %d records (%v), want the 3 gangs", len(m), err)
	}
}

// A read of the ConfigMap that fails at a term's start (the apiserver,
// not the content) is tried again at the next round, and nothing is
// written until it succeeds: a write would replace the records another
// leader left there with this one's alone.
func TestEvictedWorkReadRetriedBeforeWriting(t *testing.T) {
	w := newWorld(t, testCfg(), 1, 1, 4)
	s, ctx := w.s, context.Background()
	theirs, _ := formatEvictedWork(map[string]evictedWork{"ns/theirs": {executed: 50, attained: 50, service: 200, owner: "u1", at: time.Now(), seen: time.Now(), saved: time.Now()}}, 1<<20)
	if _, err := w.cs.CoreV1().ConfigMaps(s.cfg.Namespace).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultEvictedWorkConfigMap, Namespace: s.cfg.Namespace},
		Data:       map[string]string{EvictedWorkKey: theirs},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	fail := 0 // the next GETs that fail: the term's read, not the write's own
	w.cs.PrependReactor("get", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if fail > 0 {
			fail--
			return true, nil, apierrors.NewInternalError(fmt.Errorf("etcd leader changed"))
		}
		return false, nil, nil
	})
	held := func() map[string]evictedWork {
		t.Helper()
		cm, err := w.cs.CoreV1().ConfigMaps(s.cfg.Namespace).Get(ctx, DefaultEvictedWorkConfigMap, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		m, _, _, err := parseEvictedWork("cm", cm.Data[EvictedWorkKey], time.Now(), time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	// Two rounds that read in vain, each after this leader evicted a gang.
	for i := range 2 {
		if !s.evicted.restore {
			t.Fatalf("round %d: the read is not owed any more", i)
		}
		fail = 1
		s.restoreEvictedWork(ctx, true)
		s.evictedWork[fmt.Sprintf("ns/mine%d", i)] = evictedWork{executed: 10, attained: 10, service: 40, owner: "u2", at: time.Now(), seen: time.Now(), saved: time.Now()}
		s.evicted.dirty = true
		s.saveEvictedWork(ctx, time.Now())
		s.settleEvicted(true)
		if m := held(); len(m) != 1 || m["ns/theirs"].executed != 50 {
			t.Fatalf("round %d, the ConfigMap unread: it holds %v, want the other leader's record alone", i, m)
		}
	}
	if n := strings.Count(w.log.String(), "evicted gangs' work not read"); n != 1 {
		t.Errorf("the failed reads said %d times, want once", n)
	}
	s.restoreEvictedWork(ctx, true)
	s.saveEvictedWork(ctx, time.Now())
	s.settleEvicted(true)
	if m := held(); len(m) != 3 || m["ns/theirs"].executed != 50 || m["ns/mine0"].executed != 10 || m["ns/mine1"].executed != 10 {
		t.Errorf("once read, the ConfigMap holds %v, want the other leader's record and this one's two", m)
	}
}

// The ConfigMap is written at most once per evictedWorkWriteInterval:
// each write replaces up to 512 KiB that etcd keeps until compaction, and
// rounds a second apart under heavy preemption wrote one every second.
// What a throttled round left unwritten is written by a later one, and
// by the flush when the term ends.
func TestEvictedWorkWritesThrottled(t *testing.T) {
	w := newWorld(t, testCfg(), 1, 1, 4)
	s, ctx := w.s, context.Background()
	s.restoreEvictedWork(ctx, true)
	t0 := time.Now()
	for i := range 21 { // a round a second, each evicting a gang
		s.evictedWork[fmt.Sprintf("ns/g%d", i)] = evictedWork{executed: 100, attained: 100, service: 400, owner: "u", at: t0, seen: t0, saved: t0}
		s.evicted.dirty = true
		s.saveEvictedWork(ctx, t0.Add(time.Duration(i)*time.Second))
		s.settleEvicted(true)
	}
	if n := testutil.ToFloat64(s.metrics.EvictedWorkWrites.WithLabelValues("ok")); n != 3 {
		t.Errorf("21 rounds a second apart: %v writes, want 3 (at 0, 10 and 20 s)", n)
	}
	s.evictedWork["ns/late"] = evictedWork{executed: 100, attained: 100, service: 400, owner: "u", at: t0, seen: t0, saved: t0}
	s.evicted.dirty = true
	s.saveEvictedWork(ctx, t0.Add(21*time.Second)) // throttled
	s.flushEvictedWork()
	cm, err := w.cs.CoreV1().ConfigMaps(s.cfg.Namespace).Get(ctx, DefaultEvictedWorkConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if m, _, _, err := parseEvictedWork("cm", cm.Data[EvictedWorkKey], time.Now(), time.Hour); err != nil || len(m) != 22 {
		t.Errorf("after the term's flush the ConfigMap holds %d records (%v), want all 22", len(m), err)
	}
}
