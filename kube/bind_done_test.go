package kube

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A gang preempted after running, and placed again, resumes from its
// checkpoint: its new bind-info records the work it had done (Done), so
// that a scheduler that did not see its first run (a restart, another
// leader) credits that work and the time since the new bind, not the
// time since the new bind alone. LAS on one 4-GPU node, rounds 100 s
// apart, a unit model (1 s an iteration): a runs from 0; b arrives at
// 250 and, having attained less, takes the node at 300 (a is evicted and
// its controller makes it again); a runs again once b has attained more.
func TestBindInfoCarriesWorkDone(t *testing.T) {
	w, t0 := lasWorld(t)
	ann := map[string]string{AnnModel: "unit", AnnIterations: "100000"}
	w.create("a", 4, ann, t0)
	var rebound *BindInfo
	var doneAtBind float64
	for r := 0; r <= 12 && rebound == nil; r++ {
		at := t0.Add(time.Duration(r) * 100 * time.Second)
		if r == 3 {
			w.create("b", 4, ann, at.Add(-50*time.Second))
		}
		w.recreateDeleted() // evicted pods go, and their controller makes them again
		w.deliver(-1)
		w.round(at)
		w.deliver(-1)
		w.mu.Lock()
		p := w.pods["ns/a"]
		w.mu.Unlock()
		if r > 3 && p != nil && p.Spec.NodeName != "" {
			bi, err := ParseBindInfo(p.Annotations[AnnBindInfo])
			if err != nil {
				t.Fatal(err)
			}
			rebound, doneAtBind = bi, creditJob(t, w, "ns/pod:a").Executed
		}
	}
	if rebound == nil {
		t.Fatal("a was not placed again within 12 rounds")
	}
	if !(doneAtBind >= 200) || rebound.Done != doneAtBind {
		t.Fatalf("a placed again having done %v iterations; its bind-info records done %v, want the same (at least 200)", doneAtBind, rebound.Done)
	}
	bound, err := time.Parse(time.RFC3339Nano, rebound.Round)
	if err != nil {
		t.Fatal(err)
	}

	// A new scheduler, 100 s after a's new bind: it credits the work a
	// had done before that bind and the 100 s since. The evicted-work
	// ConfigMap still holds a record of a (its removal, written after
	// the round that resumed a, was lost in a crash): the bind-info
	// stands, and the record is not credited on top of it.
	w.mu.Lock()
	owner := w.pods["ns/a"].OwnerReferences[0].UID
	w.mu.Unlock()
	stale, _ := formatEvictedWork(map[string]evictedWork{"ns/pod:a": {executed: 5000, attained: 5000, service: 20000, owner: owner, at: time.Now(), seen: time.Now()}}, 1<<20)
	cm, err := w.cs.CoreV1().ConfigMaps(w.s.cfg.Namespace).Get(context.Background(), DefaultEvictedWorkConfigMap, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("the evicted-work ConfigMap: %v", err)
	}
	cm.Data[EvictedWorkKey] = stale
	if _, err := w.cs.CoreV1().ConfigMaps(w.s.cfg.Namespace).Update(context.Background(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	w.restart()
	w.round(bound.Add(100 * time.Second))
	if got, want := creditJob(t, w, "ns/pod:a").Executed, rebound.Done+100; math.Abs(got-want) > 1e-6 {
		t.Errorf("after a restart a has done %v iterations, want %v (%v before its bind, 100 since)", got, want, rebound.Done)
	}
	// And its attained service (LAS's key): what it had attained when
	// placed again, and the 100 s since.
	if got, want := creditJob(t, w, "ns/pod:a").Attained, rebound.Attained+100; !(rebound.Attained >= 200) || math.Abs(got-want) > 1e-6 {
		t.Errorf("after a restart a has attained %v s, want %v (its bind-info's %v, 100 since)", got, want, rebound.Attained)
	}
}

// The same on a cluster: a Job's evicted pods go, and the Job controller
// makes new ones (new names) only after its failure backoff (10 s, then
// 20 s, ...), so rounds run while the gang has no pod at all, and the
// state forgets it. Its new pods must still be credited the work it had
// done: its new bind-info says it (done), and LAS orders it by the
// service it had. Here a round passes between a's eviction and its new
// pod, which has a new name. The gang is kept by pal.io/gang, or, for a
// Job of parallelism 1 (each pod a gang of its own, keyed by its name),
// by the Job.
func TestWorkDoneAcrossControllerBackoff(t *testing.T) {
	for _, c := range evictedCases() {
		t.Run(c.name, func(t *testing.T) {
			w, t0 := lasWorld(t)
			ann := c.ann
			w.createWith("a", 4, ann("ga"), t0, c.owners)
			var rebound *BindInfo
			for r := 0; r <= 12 && rebound == nil; r++ {
				at := t0.Add(time.Duration(r) * 100 * time.Second)
				if r == 3 {
					w.create("b", 4, ann("gb"), at.Add(-50*time.Second))
				}
				for _, old := range w.deleting() {
					w.remove(old.Namespace + "/" + old.Name)
					w.deliver(-1)
					w.round(at.Add(-50 * time.Second)) // the controller's backoff: no pod of the gang
					n := old.DeepCopy()
					n.Name += "x"
					w.reborn = at.Add(-40 * time.Second) // as the apiserver stamps the new pod
					w.recreate(n)
				}
				w.deliver(-1)
				w.round(at)
				w.deliver(-1)
				rebound = w.boundInfo("ax")
			}
			if rebound == nil {
				t.Fatal("a was not placed again within 12 rounds")
			}
			if !(rebound.Done >= 200) {
				t.Errorf("a placed again after its controller's backoff; its bind-info records done %v, want the iterations it had run (at least 200)", rebound.Done)
			}
			// It arrived at t0, not when its new pod was made: FIFO and
			// every order's ties keep its place in line, and its
			// bind-info says so for a scheduler that never saw it arrive.
			key := "ns/pod:ax"
			if c.gang {
				key = "ns/ga"
			}
			if got := w.s.wallOf(creditJob(t, w, key).Submit); got.Sub(t0).Abs() > time.Millisecond {
				t.Errorf("a's new pod, made at %v, arrived at %v; want a's first arrival %v", w.reborn, got, t0)
			}
			if want := t0.UTC().Format(time.RFC3339Nano); rebound.Arrived != want {
				t.Errorf("a's new bind-info says it arrived %q, want %q", rebound.Arrived, want)
			}
		})
	}
}

// lasWorld is one 4-GPU node under LAS and packed-sticky placement,
// rounds 100 s apart, with a unit model (pal.io/model unit: 1 s an
// iteration, class A) and no locality penalty; t0 is its first round.
func lasWorld(t *testing.T) (*world, time.Time) {
	t.Helper()
	models := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(models, []byte("models:\n  - name: unit\n    iter_time_s: 1\n    class: A\n    paper_class: A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testCfg()
	cfg.Scheduler, cfg.Placement = "las", "packed-sticky"
	cfg.LocalityPenalty, cfg.Models = 1, models
	cfg.Period = Duration{100 * time.Second}
	return newWorld(t, cfg, 1, 1, 4), time.Unix(1_000_000, 0)
}

// evictedCase is a gang that is evicted and comes back under a new pod
// name: kept by pal.io/gang, or, for a Job of parallelism 1 (each pod a
// gang of its own, keyed by its name), by the Job.
type evictedCase struct {
	name   string
	gang   bool // pal.io/gang (else a Job's pods)
	owners []metav1.OwnerReference
}

func evictedCases() []evictedCase {
	yes := true
	job := []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "ja", UID: "uid-job-a", Controller: &yes}}
	return []evictedCase{{"pal.io/gang", true, nil}, {"a Job of parallelism 1", false, job}}
}

// ann is the annotations of a pod of gang g: the unit model, a long run.
func (c evictedCase) ann(g string) map[string]string {
	a := map[string]string{AnnModel: "unit", AnnIterations: "100000"}
	if c.gang {
		a[AnnGang], a[AnnGangSize] = g, "1"
	}
	return a
}

// boundInfo is the bind-info of the bound pod whose name starts with
// prefix, nil when there is none.
func (w *world) boundInfo(prefix string) *BindInfo {
	w.t.Helper()
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, p := range w.pods {
		if strings.HasPrefix(p.Name, prefix) && p.Spec.NodeName != "" {
			bi, err := ParseBindInfo(p.Annotations[AnnBindInfo])
			if err != nil {
				w.t.Fatal(err)
			}
			return bi
		}
	}
	return nil
}
