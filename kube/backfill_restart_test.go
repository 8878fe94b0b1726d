package kube

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// restart replaces the world's scheduler by a fresh one on the same
// objects, as a new process (or a new leader) would start: a new state
// and placer, fed every object as its informers' first lists would.
func (w *world) restart() {
	w.t.Helper()
	// The old process's background writes (annotations, PodGroup
	// status) had the period between rounds to land, as they would
	// before a crash that follows a round by seconds.
	w.s.statusWG.Wait()
	s, err := New(w.s.cfg, w.cs, slog.New(slog.NewTextHandler(w.log, nil)))
	if err != nil {
		w.t.Fatal(err)
	}
	s.binder.Backoff, s.binder.MaxBackoff = time.Millisecond, 4*time.Millisecond
	s.Start(w.ctx)
	w.t.Cleanup(s.Stop)
	w.s = s
	w.known = map[string]bool{}
	w.relist()
}

// playOverrunWith runs the backfill hand case's rounds every 100 s from
// 0 to 2500 s with the scheduler restarted before the round at restartAt
// (-1: never): a bound pod ends after runFor[its gang] seconds from its
// bind; an evicted pod is made again by its controller with the time it
// has left. after runs at the end of each second's round. It returns the
// binds ("sec: pods") and the evictions.
func playOverrunWith(t *testing.T, w *world, at func(int) time.Time, runFor map[string]int, restartAt int, after func(sec int)) (got, evicted []string) {
	t.Helper()
	ends, started := map[string]int{}, map[string]int{}
	for sec := 0; sec <= 2500; sec += 100 {
		for p, e := range ends {
			if e == sec {
				w.finish("ns/" + p)
				delete(ends, p)
			}
		}
		if sec == restartAt {
			w.restart()
		}
		w.deliver(-1)
		w.round(at(sec))
		w.deliver(-1)
		for _, old := range w.deleting() {
			w.remove("ns/" + old.Name)
			evicted = append(evicted, fmt.Sprintf("%d: %s", sec, old.Name))
			runFor[old.Name] -= sec - started[old.Name]
			w.recreate(old)
		}
		w.deliver(-1)
		live := map[string]bool{}
		var now []string
		for _, k := range strings.Fields(w.bound()) {
			name := strings.TrimPrefix(k[:strings.Index(k, "@")], "ns/")
			live[name] = true
			if _, ok := ends[name]; !ok {
				now = append(now, name)
				d, ok := runFor[name]
				if !ok {
					d = runFor[name[:1]]
				}
				ends[name], started[name] = sec+d, sec
			}
		}
		for name := range ends {
			if !live[name] {
				delete(ends, name) // evicted
			}
		}
		if err := w.check(); err != nil {
			t.Fatalf("t=%d: %v", sec, err)
		}
		if len(now) > 0 {
			slices.Sort(now)
			got = append(got, fmt.Sprintf("%d: %s", sec, strings.Join(now, " ")))
		}
		after(sec)
	}
	return got, evicted
}

// The promise backfill made to a waiting gang outlives the scheduler:
// the overrun case. a (two 4-GPU pods) says 1000 s; g (16 GPUs, 500 s)
// is reserved all 16 GPUs at a's stated end, 1000, its promised start;
// s (2 GPUs) says 1000 iterations, which end by then, so it binds at 0
// on reserved GPUs, but runs 1500 s. At 1000 s is evicted, g binds at
// 1100 and s again at 1600 (g ends). When a ends early, at 700, g would
// fit if s were evicted, but s was promised its GPUs until g's promised
// time: the same answer. The scheduler is replaced by a fresh one before
// the round at 500 (a restart, or another replica taking the lease): it
// reads s's pods' record and does the same, at the same times, as the
// one that ran throughout. Without the record it took s for any gang
// behind g, and with a ending at 700 evicted it then, as soon as g fitted.
func TestSchedulerBackfillPromiseSurvivesRestart(t *testing.T) {
	wantBinds := []string{"0: a-0 a-1 s", "1100: g-0 g-1 g-2 g-3", "1600: s"}
	promised := time.Unix(1_001_000, 0).UTC().Format(time.RFC3339Nano)
	for _, placement := range []string{"packed-sticky", "pal-ma"} {
		for _, c := range []struct{ aRun, restartAt int }{{1000, -1}, {1000, 500}, {700, -1}, {700, 500}} {
			aRun, restartAt := c.aRun, c.restartAt
			t.Run(fmt.Sprintf("%s/a ends at %d/restart at %d", placement, aRun, restartAt), func(t *testing.T) {
				w, t0, at, ann := backfillCase(t, placement, "easy")
				w.create("s", 2, ann("1000"), t0.Add(-2*time.Second))
				// Before any eviction: s's pods carry the record of the
				// head it jumped and its promise, the head g's pods that
				// promise alone (writePromises), a's none.
				var recs []string
				check := func(sec int) {
					if sec != 100 {
						return
					}
					w.mu.Lock()
					defer w.mu.Unlock()
					for _, k := range slices.Sorted(maps.Keys(w.pods)) {
						p := w.pods[k]
						if h, ok := p.Annotations[AnnBackfillHead]; ok || p.Annotations[AnnBackfillPromise] != "" {
							recs = append(recs, k+" "+h+" "+p.Annotations[AnnBackfillPromise])
						}
					}
				}
				got, evicted := playOverrunWith(t, w, at, map[string]int{"a": aRun, "g": 500, "s": 1500}, restartAt, check)
				if want := []string{"ns/g-0  " + promised, "ns/g-1  " + promised, "ns/g-2  " + promised, "ns/g-3  " + promised, "ns/s ns/g " + promised}; !slices.Equal(recs, want) {
					t.Errorf("records at 100 s %q, want %q", recs, want)
				}
				if !slices.Equal(got, wantBinds) {
					t.Errorf("binds %q, want %q", got, wantBinds)
				}
				if !slices.Equal(evicted, []string{"1000: s"}) {
					t.Errorf("evicted %q, want s at 1000 (g's promised start)", evicted)
				}
			})
		}
	}
}

// A record that cannot be read, or names no waiting gang, is ignored:
// the restarted scheduler runs on, s counts as any gang behind g (it is
// evicted at 700, when g fits), and an unreadable record is logged once,
// naming the pod and the annotation.
func TestSchedulerBackfillRecordIgnored(t *testing.T) {
	for _, c := range []struct {
		name, ann, value, warn string
	}{
		{"bad time", AnnBackfillPromise, "tomorrow at noon", AnnBackfillPromise},
		{"NaN", AnnBackfillPromise, "NaN", AnnBackfillPromise},
		{"infinite", AnnBackfillPromise, "+Inf", AnnBackfillPromise},
		{"year 9999", AnnBackfillPromise, "9999-12-31T23:59:59Z", AnnBackfillPromise},
		{"unix, far", AnnBackfillPromise, "1e12", AnnBackfillPromise},
		{"itself", AnnBackfillHead, "ns/pod:s", AnnBackfillHead},
		{"empty head", AnnBackfillHead, "", AnnBackfillHead},
		{"unknown head", AnnBackfillHead, "ns/nope", ""},
		{"head bound", AnnBackfillHead, "ns/a", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, "packed-sticky", "easy")
			w.create("s", 2, ann("1000"), t0.Add(-2*time.Second))
			spoil := func(sec int) {
				if sec != 400 {
					return
				}
				w.mu.Lock()
				defer w.mu.Unlock()
				for _, k := range []string{"ns/s"} {
					p := w.pods[k].DeepCopy()
					p.Annotations[c.ann] = c.value
					w.put(p)
				}
			}
			got, evicted := playOverrunWith(t, w, at, map[string]int{"a": 700, "g": 500, "s": 1500}, 500, spoil)
			if want := []string{"0: a-0 a-1 s", "800: g-0 g-1 g-2 g-3", "1300: s"}; !slices.Equal(got, want) {
				t.Errorf("binds %q, want %q", got, want)
			}
			if !slices.Equal(evicted, []string{"700: s"}) {
				t.Errorf("evicted %q, want s at 700", evicted)
			}
			var warns []string
			for _, l := range strings.Split(w.log.String(), "\n") {
				if strings.Contains(l, "level=WARN") && strings.Contains(l, "backfill record") {
					warns = append(warns, l)
				}
			}
			switch {
			case c.warn == "" && len(warns) > 0:
				t.Errorf("warned of a record that is only stale:\n%s", strings.Join(warns, "\n"))
			case c.warn != "" && (len(warns) != 1 || !strings.Contains(warns[0], "pod=ns/s") || !strings.Contains(warns[0], "annotation="+c.warn)):
				t.Errorf("warnings %q, want one naming pod ns/s and %s", warns, c.warn)
			}
		})
	}
}

// A restarted scheduler credits a running gang the time since its bind
// (pal.io/bind-info), not nothing: the backfill hand case with the
// scheduler replaced before the round at 500 s, when gang a (stated and
// run 1000 s) has 500 s left. Pod late (2 GPUs, 700 s) comes at 450 s.
// Read right, g's reservation is all 16 GPUs at a's end, 1000, and late
// (ending 1200 if started at 500) would hold two of them past it: it
// waits; g binds at 1000 and late at 1500, when g ends. A restart that
// read a's whole 1000 s as still to do put a's end at 1500 and g's
// reservation with it: late (ending 1200 < 1500) was backfilled at 500
// and g waited for it, to 1200.
func TestSchedulerRestartCreditsRunningGangs(t *testing.T) {
	want := []string{"0: a-0 a-1", "1000: g-0 g-1 g-2 g-3", "1500: late"}
	for _, restartAt := range []int{-1, 500} {
		t.Run(fmt.Sprintf("restart at %d", restartAt), func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, "packed-sticky", "easy")
			arrive := func(sec int) {
				if sec == 400 {
					w.create("late", 2, ann("700"), t0.Add(450*time.Second))
				}
			}
			got, evicted := playOverrunWith(t, w, at, map[string]int{"a": 1000, "g": 500, "late": 700}, restartAt, arrive)
			if !slices.Equal(got, want) {
				t.Errorf("binds %q, want %q", got, want)
			}
			if len(evicted) > 0 {
				t.Errorf("evicted %q, want none", evicted)
			}
			if restartAt > 0 && !strings.Contains(w.log.String(), "free in about 500 s") {
				t.Errorf("no waiting message after the restart puts a's end 500 s on:\n%s", w.log.String())
			}
		})
	}
}

// A record names its waiting gang by key, and a gang that left can come
// back under the same key (a Job deleted and applied again, a pal.io/gang
// name used again): that is another gang, which the backfilled one never
// jumped. The hand case with s backfilled past g (promised 1000): g's
// pods are deleted at 300 and a new g is made at 400, after s; the
// scheduler restarts at 500. s is ahead of the new g, so it is not
// evicted for it: g binds when s ends at 1500, as the scheduler that
// never restarted does. A restart used to read s's record as a promise
// to the new g and evicted s at 1000.
func TestSchedulerBackfillRecordOfGoneHead(t *testing.T) {
	for _, restartAt := range []int{-1, 500} {
		t.Run(fmt.Sprintf("restart at %d", restartAt), func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, "packed-sticky", "easy")
			w.create("s", 2, ann("1000"), t0.Add(-2*time.Second))
			again := func(sec int) {
				switch sec {
				case 300:
					for i := range 4 {
						w.remove(fmt.Sprintf("ns/g-%d", i))
					}
				case 400:
					for i := range 4 {
						w.create(fmt.Sprintf("g-%d", i), 4, ann("500", AnnGang, "g", AnnGangSize, "4"), at(sec))
					}
				}
			}
			got, evicted := playOverrunWith(t, w, at, map[string]int{"a": 700, "g": 500, "s": 1500}, restartAt, again)
			if want := []string{"0: a-0 a-1 s", "1500: g-0 g-1 g-2 g-3"}; !slices.Equal(got, want) || len(evicted) > 0 {
				t.Errorf("binds %q, evicted %q; want %q and nothing evicted", got, evicted, want)
			}
		})
	}
}

// A record's head may be a gang that ran and was stopped at the very
// round that backfilled past it (under LAS or SRTF the order preempts a
// running gang, which is then the first that waits): its controller
// makes its pods again after that round, and it is still the gang that
// was jumped, as its work record says (it arrived before). A head that
// has been bound since the record's round, though, started: the placer
// that made the record forgot it then, and a restart must too, whatever
// the head's pods say now. The hand case with s backfilled past g at 0
// (promised 1000; a ends early, at 700): after the round at 0 g's pods
// are made again at 50, with a work record of g (arrived at -3) saying it
// was last bound at -100 (stopped at 0), or at 50 (it ran after s jumped
// it), and the scheduler restarts at 100. In the first case it restores
// s's record: s keeps its GPUs until g's promised time, as in the overrun
// case. In the second the record is spent: s counts as any gang behind g
// and is evicted at 700, when g fits. The first used to read g as a gang
// that came after s, and dropped the record (under LAS with PAL, seed 0
// of TestRestartsChangeNothing differed from round 23).
func TestSchedulerBackfillRecordOfHeadStoppedAtItsRound(t *testing.T) {
	for _, c := range []struct {
		name     string
		bound    int
		binds    []string
		evicted  []string
		restored bool
	}{
		{"stopped at the record's round", -100, []string{"0: a-0 a-1 s", "1100: g-0 g-1 g-2 g-3", "1600: s"}, []string{"1000: s"}, true},
		{"bound since", 50, []string{"0: a-0 a-1 s", "800: g-0 g-1 g-2 g-3", "1300: s"}, []string{"700: s"}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, "packed-sticky", "easy")
			w.create("s", 2, ann("1000"), t0.Add(-2*time.Second))
			remake := func(sec int) {
				if sec != 0 {
					return
				}
				now := time.Now()
				writeEvictedWork(t, w, map[string]evictedWork{"ns/g": {owner: "uid-set", at: now, seen: now, saved: now, arrived: at(-3), bound: at(c.bound)}})
				for i := range 4 {
					w.remove(fmt.Sprintf("ns/g-%d", i))
					w.create(fmt.Sprintf("g-%d", i), 4, ann("500", AnnGang, "g", AnnGangSize, "4"), at(50))
				}
			}
			got, evicted := playOverrunWith(t, w, at, map[string]int{"a": 700, "g": 500, "s": 1500}, 100, remake)
			if !slices.Equal(got, c.binds) || !slices.Equal(evicted, c.evicted) {
				t.Errorf("binds %q, evicted %q; want %q and %q", got, evicted, c.binds, c.evicted)
			}
			promised := time.Unix(1_001_000, 0).UTC().Format(time.RFC3339Nano)
			line := `msg="backfill record restored" gang="pod ns/s" head="gang ns/g" promised=` + promised
			if restored := strings.Contains(w.log.String(), line); restored != c.restored {
				t.Errorf("s's record restored: %v, want %v", restored, c.restored)
			}
		})
	}
}

// writeEvictedWork puts records of evicted work in the world's ConfigMap,
// as a scheduler before a restart wrote them.
func writeEvictedWork(t *testing.T, w *world, m map[string]evictedWork) {
	t.Helper()
	rec, _ := formatEvictedWork(m, 1<<20)
	cms := w.cs.CoreV1().ConfigMaps(w.s.cfg.Namespace)
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: DefaultEvictedWorkConfigMap, Namespace: w.s.cfg.Namespace},
		Data:       map[string]string{EvictedWorkKey: rec},
	}
	if _, err := cms.Update(context.Background(), cm, metav1.UpdateOptions{}); apierrors.IsNotFound(err) {
		if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// A head's promise is recorded where a fresh scheduler finds it: on its
// pending pods (pal.io/backfill-promise without pal.io/backfill-head),
// and, for a head evicted this round whose controller has not made its
// pods again yet, in its evicted-work record. Here g (16 GPUs) waits
// behind a (8 GPUs, 1000 s) and is promised a's end. Then g's pods are
// made again without the annotation while its work record holds an
// earlier promise (900 s), and the scheduler restarts: it holds g to the
// record's promise, and writes it on g's new pods. A pod annotation
// that predates its gang is not the scheduler's and is ignored.
func TestHeadPromiseRecorded(t *testing.T) {
	w, _, at, ann := backfillCase(t, "packed-sticky", "easy")
	for _, sec := range []int{0, 20} {
		w.deliver(-1)
		w.round(at(sec))
		w.deliver(-1)
		w.s.statusWG.Wait()
	}
	promise := func(name string) string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.pods["ns/"+name].Annotations[AnnBackfillPromise]
	}
	at1000 := time.Unix(1_001_000, 0).UTC().Format(time.RFC3339Nano)
	for i := range 4 {
		if got := promise(fmt.Sprintf("g-%d", i)); got != at1000 {
			t.Fatalf("head g-%d's promise %q after the first round, want a's end %q", i, got, at1000)
		}
	}

	// remake makes g's pods again (as an eviction's successors are) at
	// made while the record of g's work holds promise, then restarts the
	// scheduler and runs its first round at round.
	remake := func(promise time.Time, made, round int) {
		t.Helper()
		writeEvictedWork(t, w, map[string]evictedWork{"ns/g": {executed: 0, owner: "uid-set", at: time.Now(), seen: time.Now(), saved: time.Now(), promise: promise}})
		for i := range 4 {
			w.remove(fmt.Sprintf("ns/g-%d", i))
			w.create(fmt.Sprintf("g-%d", i), 4, ann("500", AnnGang, "g", AnnGangSize, "4"), at(made))
		}
		w.deliver(-1)
		w.restart()
		w.round(at(round))
		w.deliver(-1)
		w.s.statusWG.Wait()
	}

	// The record holds an earlier promise than the one g had: it stands.
	at900 := time.Unix(1_000_900, 0)
	remake(at900, 60, 100)
	if got, want := promise("g-0"), at900.UTC().Format(time.RFC3339Nano); got != want {
		t.Errorf("after the restart g's new pods carry promise %q, want the record's %q", got, want)
	}

	// A promise on a head's pods from before the gang existed: ignored.
	early := at(-3600).UTC().Format(time.RFC3339Nano)
	for i := range 4 {
		w.create(fmt.Sprintf("k-%d", i), 4, ann("500", AnnGang, "k", AnnGangSize, "4", AnnBackfillPromise, early), at(150))
	}
	w.deliver(-1)
	w.restart()
	w.round(at(200))
	w.deliver(-1)
	if !strings.Contains(w.log.String(), `msg="ignoring a backfill promise" pod=ns/k-0`) {
		t.Errorf("k's promise from before k's pods were made was not refused:\n%s", w.log.String())
	}

	// A work record whose promise is two years on is no scheduler's: not
	// restored.
	far := at(2 * 365 * 24 * 3600)
	remake(far, 250, 300)
	if got := promise("g-0"); got == far.UTC().Format(time.RFC3339Nano) || strings.Contains(w.log.String(), "promised="+far.UTC().Format(time.RFC3339Nano)) {
		t.Errorf("after the restart the record's promise two years on was restored (g's pods carry %q):\n%s", got, w.log.String())
	}
}

// The scheduler's background annotation writes (a head's promise, a
// forecast's start, a renewed lease) name the pod they were meant for by
// UID: a pod deleted and made again under its name before the write went
// out (an eviction's successor, as some controllers name them) is not
// that pod. Without the precondition the successor carried its
// predecessor's promise, which a restarted scheduler then restored.
func TestBackgroundAnnotationsKeepToTheirPod(t *testing.T) {
	w := newWorld(t, testCfg(), 1, 1, 4)
	at := time.Unix(1_000_000, 0)
	w.create("old", 1, nil, at)
	w.create("same", 1, nil, at)
	w.mu.Lock()
	old, same := w.pods["ns/old"].DeepCopy(), w.pods["ns/same"].DeepCopy()
	w.mu.Unlock()
	w.remove("ns/old")
	w.create("old", 1, nil, at.Add(time.Minute)) // its successor, under its name
	var busy atomic.Bool
	w.s.annotateInBackground(&busy, AnnBackfillPromise, "test", map[*corev1.Pod]string{old: "x", same: "y"})
	w.s.statusWG.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	if v, ok := w.pods["ns/old"].Annotations[AnnBackfillPromise]; ok {
		t.Errorf("the successor of ns/old carries %q, meant for the pod it replaced", v)
	}
	if v := w.pods["ns/same"].Annotations[AnnBackfillPromise]; v != "y" {
		t.Errorf("ns/same carries %q, want y", v)
	}
}

// A background annotation patch the apiserver refuses as Forbidden (the
// role lacks patch on pods) is said at Error once per kind of write, not
// at Info with every transient failure: each later write fails the same
// way, and what it records is lost to a restart. Two batches of two
// pods: one Error for the promises, one for the leases; the rest at
// Info.
func TestBackgroundAnnotationForbiddenSaidOnce(t *testing.T) {
	w := newWorld(t, testCfg(), 1, 1, 4)
	at := time.Unix(1_000_000, 0)
	w.create("a", 1, nil, at)
	w.create("b", 1, nil, at)
	w.cs.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewForbidden(corev1.Resource("pods"), "a", fmt.Errorf("no patch"))
	})
	w.mu.Lock()
	a, b := w.pods["ns/a"].DeepCopy(), w.pods["ns/b"].DeepCopy()
	w.mu.Unlock()
	var busy atomic.Bool
	for _, key := range []string{AnnBackfillPromise, AnnBackfillPromise, AnnLeaseUntil} {
		w.s.annotateInBackground(&busy, key, "writing "+key, map[*corev1.Pod]string{a: "x", b: "y"})
		w.s.statusWG.Wait()
	}
	var errs, infos int
	for _, l := range strings.Split(w.log.String(), "\n") {
		switch {
		case strings.Contains(l, "level=ERROR") && strings.Contains(l, "forbidden, and every such write will be"):
			errs++
		case strings.Contains(l, "level=INFO") && strings.Contains(l, "msg=\"writing pal.io/"):
			infos++
		}
	}
	if errs != 2 || infos != 4 {
		t.Errorf("%d Error lines and %d Info lines for 6 refused writes of two kinds, want 2 and 4:\n%s", errs, infos, w.log.String())
	}
}
