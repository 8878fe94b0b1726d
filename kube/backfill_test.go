package kube

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// The hand-computed backfill case on the fake clientset, as in pal sim:
// 4 nodes x 4 GPUs, all alike (no scores, locality penalty 1), FIFO,
// packed-sticky and the default pal-ma, a round every 100 s; a model of 1 s per iteration, so
// pal.io/iterations is a run time in seconds. Gang a (two 4-GPU pods)
// runs 0-1000 s; at 0 come gang g (four 4-GPU pods, 16 GPUs, 500 s), then
// 2-GPU pods s300, s600 and s1500 (created 1 s apart, in that order).
// The test ends each pod when its time is up, as its kubelet would.
//
// Worked out by hand: under easy, g's reservation is t = 1000 (a ends)
// on all 16 GPUs, so s300 and s600 (ending 300, 600 <= 1000) bind at 0
// and s1500 waits; g binds at 1000 exactly. Under none only a binds at
// 0 and the three wait behind g, which binds at 1000; they bind at 1500
// when it ends.
func TestSchedulerBackfillHandCase(t *testing.T) {
	want := map[string][]string{ // pods that bind at each time
		"none": {"0: a-0 a-1", "1000: g-0 g-1 g-2 g-3", "1500: s1500 s300 s600"},
		"easy": {"0: a-0 a-1 s300 s600", "1000: g-0 g-1 g-2 g-3", "1500: s1500"},
	}
	for _, c := range [][2]string{{"packed-sticky", "none"}, {"packed-sticky", "easy"}, {"pal-ma", "none"}, {"pal-ma", "easy"}} {
		placement, mode := c[0], c[1]
		t.Run(placement+"/"+mode, func(t *testing.T) {
			w, t0, at, ann := backfillCase(t, placement, mode)
			for i, d := range []string{"300", "600", "1500"} {
				w.create("s"+d, 2, ann(d), t0.Add(time.Duration(i-2)*time.Second))
			}
			got := playBackfill(t, w, at)
			if mode == "easy" && !strings.Contains(w.log.String(), "backfill reserves 16 GPUs for it, free in about 1000 s") {
				t.Errorf("no waiting message names g's reservation:\n%s", w.log.String())
			}
			if !slices.Equal(got, want[mode]) {
				t.Errorf("binds %q, want %q", got, want[mode])
			}
		})
	}
}

func TestConfigBackfillValues(t *testing.T) {
	for _, c := range []struct {
		set  func(*Config)
		want string
	}{
		{func(c *Config) { c.Backfill = "eazy" }, `field backfill: "eazy": want none or easy`},
		{func(c *Config) { c.Backfill = "greedy" }, `field backfill: "greedy": want none or easy`},
		{func(c *Config) { c.Backfill, c.Scheduler = "easy", "themis" }, "not with scheduler themis"},
		{func(c *Config) { c.Backfill, c.Tenancy = "easy", "quota" }, "not with tenancy quota"},
	} {
		cfg := testCfg()
		c.set(&cfg)
		if err := cfg.Validate(); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want one saying %q", err, c.want)
		}
	}
	for _, ok := range []string{"", "none", "easy", "EASY"} {
		cfg := testCfg()
		cfg.Backfill = ok
		if err := cfg.Validate(); err != nil {
			t.Errorf("backfill %q: %v", ok, err)
		}
	}
}

var _ = corev1.PodSucceeded

// TestWorkEstimateOverrun: a gang credited past the iterations its pods
// state is due now; its estimate is never negative, so a reservation
// read from it is never in the past.
func TestWorkEstimateOverrun(t *testing.T) {
	c, err := cluster.New(1, 4)
	if err != nil {
		t.Fatal(err)
	}
	env := &policy.Env{Cluster: c}
	cases := []struct {
		name       string
		iter, exec float64
		held, on   []int
		want       float64
	}{
		{"on its GPUs, 100 left", 1000, 900, []int{0, 1}, []int{0, 1}, 100 * 2 * 1.5},
		{"on its GPUs, overran by 200", 1000, 1200, []int{0, 1}, []int{0, 1}, 0},
		{"elsewhere, overran by 200", 1000, 1200, []int{0, 1}, []int{2, 3}, 0},
		{"waiting, all left", 1000, 0, nil, []int{2, 3}, 1000 * 2},
	}
	for _, tc := range cases {
		j := &workload.Job{Spec: workload.Spec{Iterations: tc.iter, IterTime: 2}, Executed: tc.exec, PM: 1.5, Loc: 1, GPUsHeld: tc.held}
		if got := workEstimate(env, j, tc.on, 1.2); got != tc.want {
			t.Errorf("%s: estimate %v s, want %v s", tc.name, got, tc.want)
		}
	}
}

// backfillCase is the fake cluster of the hand-computed backfill cases:
// 4 nodes x 4 GPUs, all alike, FIFO under placement and backfill mode, a
// round every 100 s, one model of 1 s per iteration (so pal.io/iterations
// is a run time in seconds); gang a (two 4-GPU pods, 1000 s) and gang g
// (four 4-GPU pods, 500 s) made before t0. It returns the world, t0, the
// clock of a second after t0, and the annotations of a pod of that model
// playBackfill runs the backfill hand case's rounds, every 100 s from 0
// to 3000 s: a bound pod ends after its gang's run time (a 1000 s, g
// 500 s, each s<d> d seconds), and the world is checked after each
// round. It returns, per round that bound pods, "sec: pods" (sorted).
func playBackfill(t *testing.T, w *world, at func(int) time.Time) []string {
	t.Helper()
	ends := map[string]int{} // pod -> when it ends
	runFor := map[string]int{"a": 1000, "g": 500, "s300": 300, "s600": 600, "s1500": 1500}
	bound := map[string]bool{}
	var got []string
	for sec := 0; sec <= 3000; sec += 100 {
		for p, e := range ends {
			if e == sec {
				w.finish("ns/" + p)
				delete(ends, p)
			}
		}
		w.deliver(-1)
		w.round(at(sec))
		w.deliver(-1)
		var now []string
		for _, k := range strings.Fields(w.bound()) {
			name := strings.TrimPrefix(k[:strings.Index(k, "@")], "ns/")
			if !bound[name] {
				bound[name] = true
				now = append(now, name)
				d, ok := runFor[name]
				if !ok {
					d = runFor[name[:1]]
				}
				ends[name] = sec + d
			}
		}
		if err := w.check(); err != nil {
			t.Fatalf("t=%d: %v", sec, err)
		}
		if len(now) > 0 {
			slices.Sort(now)
			got = append(got, fmt.Sprintf("%d: %s", sec, strings.Join(now, " ")))
		}
	}
	return got
}

// running iters iterations (extra: more key-value pairs).
func backfillCase(t *testing.T, placement, mode string) (*world, time.Time, func(int) time.Time, func(iters string, extra ...string) map[string]string) {
	t.Helper()
	models := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(models, []byte("models:\n  - name: unit\n    iter_time_s: 1\n    class: A\n    paper_class: A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testCfg()
	cfg.Scheduler, cfg.Placement, cfg.Backfill = "fifo", placement, mode
	cfg.LocalityPenalty, cfg.Models = 1, models
	cfg.Period = Duration{100 * time.Second}
	w := newWorld(t, cfg, 1, 4, 4)
	t0 := time.Unix(1_000_000, 0)
	ann := func(iters string, extra ...string) map[string]string {
		a := map[string]string{AnnModel: "unit", AnnIterations: iters}
		for i := 0; i+1 < len(extra); i += 2 {
			a[extra[i]] = extra[i+1]
		}
		return a
	}
	for i := range 2 {
		w.create(fmt.Sprintf("a-%d", i), 4, ann("1000", AnnGang, "a", AnnGangSize, "2"), t0.Add(-10*time.Second))
	}
	for i := range 4 {
		w.create(fmt.Sprintf("g-%d", i), 4, ann("500", AnnGang, "g", AnnGangSize, "4"), t0.Add(-3*time.Second))
	}
	return w, t0, clockAt(t0), ann
}

// The waiting message's "free in about N s" is wall seconds, as the
// estimated start beside it is: under timeScale 10 (a replay's speedup)
// gang a's 1000 s of work ends 100 wall seconds after it binds, and g's
// reservation says so. It used to give the placer's 1000 jobs' seconds
// (a dev cluster at timeScale 10 read "free in about 99567 s" beside an
// estimated start 2 h 46 min, 9,958 s, away).
func TestBackfillReservationInWallSeconds(t *testing.T) {
	models := filepath.Join(t.TempDir(), "models.yaml")
	if err := os.WriteFile(models, []byte("models:\n  - name: unit\n    iter_time_s: 1\n    class: A\n    paper_class: A\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := testCfg()
	cfg.Scheduler, cfg.Placement, cfg.Backfill = "fifo", "packed-sticky", "easy"
	cfg.LocalityPenalty, cfg.Models, cfg.TimeScale = 1, models, 10
	cfg.Period = Duration{10 * time.Second}
	w := newWorld(t, cfg, 1, 4, 4)
	t0 := time.Unix(1_000_000, 0)
	for i := range 2 {
		w.create(fmt.Sprintf("a-%d", i), 4, map[string]string{AnnModel: "unit", AnnIterations: "1000", AnnGang: "a", AnnGangSize: "2"}, t0.Add(-10*time.Second))
	}
	for i := range 4 {
		w.create(fmt.Sprintf("g-%d", i), 4, map[string]string{AnnModel: "unit", AnnIterations: "500", AnnGang: "g", AnnGangSize: "4"}, t0.Add(-3*time.Second))
	}
	w.deliver(-1)
	w.round(t0)
	w.deliver(-1)
	if want := "backfill reserves 16 GPUs for it, free in about 100 s"; !strings.Contains(w.log.String(), want) {
		t.Errorf("no waiting message says %q:\n%s", want, w.log.String())
	}
}
