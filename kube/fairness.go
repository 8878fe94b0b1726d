package kube

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"math"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/kube/state"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/registry"
	"github.com/palsched/pal/policy/themis"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
)

// AnnApp names the pod's Themis app (as annotation or label): the unit of
// finish-time fairness, typically every trial of one hyper-parameter
// search. Without it a pod's app is its batch/v1 Job, else its PodGroup,
// else its gang alone.
const AnnApp = podspec.AnnApp

// AnnLeaseUntil is written at binding under scheduler themis: when the
// lease the gang was placed on ends (RFC 3339, wall time). A restarted
// scheduler keeps a running gang's GPUs until then.
const AnnLeaseUntil = "pal.io/lease-until"

// LabelPodGroup is the scheduler-plugins PodGroup a pod belongs to.
const LabelPodGroup = "scheduling.x-k8s.io/pod-group"

// ThemisConfig holds the knobs of `scheduler: themis`. Both are the
// simulator's defaults unless set, so a cluster and `pal sim --scheduler
// themis` run the same auctions.
type ThemisConfig struct {
	// Lease is how long GPUs won in an auction are held, in the jobs' time
	// (timeScale applies): a running gang is never evicted before its
	// lease ends.
	Lease Duration `json:"lease"`
	// Knob is the fairness knob f: only the (1-f) share of apps with the
	// largest ρ bid in an auction.
	Knob float64 `json:"knob"`
}

func defaultThemisConfig() ThemisConfig {
	return ThemisConfig{Lease: Duration{time.Duration(themis.DefaultLease) * time.Second}, Knob: fairness.DefaultKnob.F()}
}

func (c *Config) validateThemis() error {
	if c.Scheduler != registry.SchedulerThemis {
		return nil
	}
	if c.Themis.Lease.Duration <= 0 {
		return fmt.Errorf("field themis.lease: must be positive, got %v", c.Themis.Lease)
	}
	if _, err := fairness.NewKnob(c.Themis.Knob); err != nil {
		return fmt.Errorf("field themis.knob: %v", err)
	}
	if c.Tenancy == "quota" {
		return fmt.Errorf("field tenancy: quota under scheduler themis is not supported: a quota VC places on the shared cluster, where Themis' leases would span VCs (use hived, hived-pm or none)")
	}
	return nil
}

// themisStage runs the simulator's Themis (policy/themis: leases and
// partial-allocation auctions) as the round's scheduler and placer. The
// policy is the one `pal sim --scheduler themis` runs; this file only
// feeds it the cluster's gangs in the policy's terms and keeps it honest:
//
//   - Time: the policy's clock is the round's start, in the jobs' seconds
//     (timeScale applies) from the first round (aligned to the period when
//     rounds are), counted in whole milliseconds so that aligned rounds fall
//     on exact multiples of the period, as the simulator's do.
//   - Jobs: each gang is a stand-in job that keeps its identity, app and
//     credited progress while its pods are evicted and recreated, so that
//     the policy sees one job through a preemption, as in the simulator.
//   - Leases: a gang the answer would move or stop before the lease on its
//     GPUs ends keeps them, the jobs that were to take them wait, and
//     pal_lease_revocations_total counts it (it should stay 0: the policy
//     never offers leased GPUs).
type themisStage struct {
	cfg    ThemisConfig
	scale  float64
	period time.Duration
	align  bool
	models *workload.Models

	pol    *themis.Policy
	shape  string         // the cluster and scores the policy was built on
	scores *policy.Scores // the scores its bids have (learnt scores and quarantine change them in place)
	epoch  time.Time
	now    float64 // this round's time on the policy's clock

	next     int                      // next stand-in job id
	stand    map[string]*workload.Job // gang key -> stand-in
	lastSeen map[string]time.Time     // gang key -> start of the last round that saw it
	appOf    map[string]string        // gang key -> app
	leaseEnd map[string]float64       // gang key -> end of the lease its GPUs are on (policy clock)
	inherit  map[string]bool          // gang keys whose leaseEnd an earlier policy granted (a restart's record, or before a rebuild)
	byWork   map[string]string        // a Job of parallelism 1's workKey -> the gang key of its pod this scheduler evicted
	owner    map[string]types.UID     // gang key -> its pods' controller when its stand-in was made ("" bare)
	rho      map[string]float64       // app -> ρ at its last auction
	auction  float64                  // time of the last auction
	exported map[string]bool          // apps with a pal_app_rho series
	vcs      []vcThemis               // under tenancy hived: each VC's policy
	vcRound  int                      // rounds placed in VCs (placeInVCs)
	violated int                      // policy violations already logged
	runs     map[string]themisRun     // gang key -> its current run (see measured)
	writing  atomic.Bool              // renewed leases being written to pods (writeLeases)
	credit   map[string]float64       // gang key -> iterations the rounds credited, at its claim
	factor   map[string]float64       // app -> measured over claimed time per iteration (absent: its claims hold)
	guessed  map[string]bool          // gang keys whose guessed work was said (see guessedWork)
	trustAll bool                     // tests: take every claim as it stands
	// finishing is the GPUs that gangs with a finished member still held
	// at the last round (see wakeOnFreed).
	finishing map[int]bool
	// carry is the VC policies' leases (job id -> end) when the stage
	// made them afresh at vcRound carryRound (see vcPlacer).
	carry      map[int]float64
	carryRound int
}

// themisRun is a running gang's current run: when its last pod started
// and the iterations credited to it before then, from which its progress
// reports count; corrected says its claim was found wrong (one event a run).
type themisRun struct {
	start     time.Time
	base      float64
	corrected bool
}

// standInKeep is how long a gang's stand-in outlives its pods (plus
// three periods): the longest the Job controller waits before it
// recreates evicted pods.
var standInKeep = JobBackoff(7)

func newThemisStage(cfg Config, models *workload.Models) *themisStage {
	return &themisStage{cfg: cfg.Themis, scale: cfg.TimeScale, period: cfg.Period.Duration, align: cfg.AlignPeriod, models: models,
		next: 1, stand: map[string]*workload.Job{}, lastSeen: map[string]time.Time{}, appOf: map[string]string{},
		leaseEnd: map[string]float64{}, inherit: map[string]bool{}, byWork: map[string]string{}, owner: map[string]types.UID{}, rho: map[string]float64{}, exported: map[string]bool{}, runs: map[string]themisRun{},
		credit: map[string]float64{}, factor: map[string]float64{}, guessed: map[string]bool{}}
}

// Name implements policy.Placer (what logs and events call the placement).
func (t *themisStage) Name() string { return registry.SchedulerThemis }

// Sticky implements policy.Placer: gangs keep their GPUs while leased.
func (t *themisStage) Sticky() bool { return true }

// Place implements policy.Placer; the round calls place instead.
func (t *themisStage) Place(*policy.Env, []*workload.Job) [][]int {
	panic("kube: themis places through themisStage.place")
}

// wall is a time on the policy's clock as a wall time.
func (t *themisStage) wall(c float64) time.Time {
	return t.epoch.Add(time.Duration(c / t.scale * float64(time.Second)))
}

// annotate adds the gang's lease end to a pod's bind annotations.
func (t *themisStage) annotate(gangKey string, ann map[string]string) map[string]string {
	if t == nil {
		return ann
	}
	if end := t.leaseEnd[gangKey]; end > 0 {
		ann[AnnLeaseUntil] = t.wall(end).UTC().Format(time.RFC3339Nano)
	}
	return ann
}

// recorded is the lease end a running gang's pods carry, on the policy's
// clock (0: none, or unreadable). The annotation is the pod owner's to
// edit, and no lease this scheduler grants ends more than a whole lease
// from now: a later end is cut to that, with a warning.
func (t *themisStage) recorded(s *Scheduler, g *gang) float64 {
	for _, p := range g.Bound {
		if v := p.Annotations[AnnLeaseUntil]; v != "" {
			if w, err := time.Parse(time.RFC3339Nano, v); err == nil && w.After(t.epoch) {
				end, most := t.clock(w), t.now+t.leaseLen()
				if end > most {
					s.log.Warn("themis: a recorded lease ends more than one lease from now; it is cut to one lease",
						"pod", podKey(p), "annotation", AnnLeaseUntil, "value", quote.Value(v), "lease", t.cfg.Lease.Duration)
					end = most
				}
				return end
			}
		}
	}
	return 0
}

// leasedUntil is the wall time the lease that gang g's bound pods run on
// ends, when that is after at (zero otherwise): the stage's record, else
// (a restarted scheduler) the pods' pal.io/lease-until, cut to one lease
// from at as recorded does. Every eviction of a running gang outside the
// policy's answer (a partly bound gang's: evictPartial) checks it; the
// answer's own moves are checked by keepLeases.
func (t *themisStage) leasedUntil(g *gang, at time.Time) time.Time {
	if t == nil || len(g.Bound) == 0 {
		return time.Time{}
	}
	var end time.Time
	if c := t.leaseEnd[g.Key]; c > 0 && !t.epoch.IsZero() {
		end = t.wall(c)
	} else {
		for _, p := range g.Bound {
			if w, err := time.Parse(time.RFC3339Nano, p.Annotations[AnnLeaseUntil]); err == nil {
				end = w
				break
			}
		}
		if most := at.Add(time.Duration(t.leaseLen() / t.scale * float64(time.Second))); end.After(most) {
			end = most
		}
	}
	if !end.After(at) {
		return time.Time{}
	}
	return end
}

// leaseLen is the lease on the policy's clock.
func (t *themisStage) leaseLen() float64 {
	if l := t.cfg.Lease.Seconds(); l > 0 {
		return l
	}
	return themis.DefaultLease
}

// clock is a wall time on the policy's clock.
func (t *themisStage) clock(w time.Time) float64 {
	d := w.Sub(t.epoch).Milliseconds()
	if d < 0 {
		return 0
	}
	return float64(d) / 1000 * t.scale
}

// build (re)makes the policy for the round's cluster and scores: its GPU
// ids and bids' speeds are the snapshot's, so a change of either starts a
// fresh policy (leases the driver recorded are still honoured).
func (t *themisStage) build(s *Scheduler, snap *snapshot) error {
	shape := s.scoresKey // its layout generation and the scores' version
	if t.pol != nil && shape == t.shape {
		if s.scores != t.scores {
			// Scores learnt or a GPU quarantined since (the same GPUs):
			// the bids take the new speeds; leases and apps stay.
			if err := t.pol.SetScores(s.scores); err != nil {
				return err
			}
			t.scores = s.scores
		}
		return nil
	}
	pol, err := t.newPolicy(t.rho, false)
	if err != nil {
		return err
	}
	for k := range t.leaseEnd {
		t.inherit[k] = true // the new policy holds none of these
	}
	if t.pol != nil {
		s.log.Warn("themis: the cluster's nodes or GPU scores changed; auctions start afresh (running gangs keep their leases)")
	}
	t.pol, t.shape, t.violated, t.scores = pol, shape, 0, s.scores
	return nil
}

// newPolicy makes a Themis with the config's knobs (the simulator's
// defaults otherwise) whose auctions record each app's ρ in rho; inVC: a
// VC's, whose running gangs the tenancy stage never moves (keepRunning),
// so its auctions keep them where they run (themis.Config.KeepRunning).
func (t *themisStage) newPolicy(rho map[string]float64, inVC bool) (*themis.Policy, error) {
	opts := fairness.DefaultOptions()
	k, err := fairness.NewKnob(t.cfg.Knob)
	if err != nil {
		return nil, err
	}
	opts.Knob = k
	return themis.New(themis.Config{Lease: t.cfg.Lease.Seconds(), Auction: opts, Models: t.models, KeepRunning: inVC,
		OnAuction: func(in fairness.Input, res *fairness.Result) {
			t.auction = in.Now
			clear(rho)
			for x, a := range in.Apps {
				rho[a.Name] = res.Apps[x].Rho
			}
		}})
}

// vcPlacer makes one VC's placer under tenancy hived: a Themis of the VC's
// own over the VC's view of its cells (its apps, leases and contention are
// the VC's), on the round's clock, as pal sim --tenancy hived runs it.
func (t *themisStage) vcPlacer() (policy.Placer, error) {
	rho := map[string]float64{}
	p, err := t.newPolicy(rho, true)
	if err != nil {
		return nil, err
	}
	// The stage makes its VCs' placers together, at its first round and
	// again at the round after a cells change (its VC layers are made
	// afresh): those of an earlier round are no longer run, and their ρ
	// (pal_app_rho) would stay exported for good.
	// The new policies keep the old ones' leases: each is told every
	// running gang's lease end (Honour; a job the policy never sees
	// leaves its entry unread), so a cells change, which evicts no gang
	// for itself, does not end the leases either.
	if slices.ContainsFunc(t.vcs, func(v vcThemis) bool { return v.made < t.vcRound }) {
		if t.carryRound != t.vcRound {
			t.carry, t.carryRound = map[int]float64{}, t.vcRound
		}
		for _, v := range t.vcs {
			if v.made < t.vcRound {
				maps.Copy(t.carry, v.pol.JobLeases(t.now))
			}
		}
	}
	if t.carryRound == t.vcRound {
		for id, end := range t.carry {
			p.Honour(id, end)
		}
	}
	t.vcs = slices.DeleteFunc(t.vcs, func(v vcThemis) bool { return v.made < t.vcRound })
	t.vcs = append(t.vcs, vcThemis{p, rho, new(int), t.vcRound})
	return themis.InVC{Policy: p, Clock: func() float64 { return t.now }}, nil
}

// vcThemis is one VC's policy and its apps' ρ.
type vcThemis struct {
	pol      *themis.Policy
	rho      map[string]float64
	violated *int
	made     int // the vcRound it was made at
}

// placeInVCs runs the tenancy stage with a Themis per VC. The VCs'
// policies read each gang's app and arrival from its job, so for the
// stage's call every job carries them (its app key, its arrival on the
// policy's clock) and gets its own arrival back after. Leases are the VC
// policies' own, in their views' GPU numbering: the stage keeps a gang on
// its cells while its VC's answer keeps its GPUs, and a broken lease is
// logged as the policy's violation.
func (t *themisStage) placeInVCs(s *Scheduler, snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang, start time.Time) [][]int {
	if t.epoch.IsZero() {
		t.epoch = start
		if t.align {
			t.epoch = start.Truncate(t.period)
		}
	}
	t.now = t.clock(start)
	type saved struct{ submit, iterTime, executed float64 }
	keep := make([]saved, len(order))
	for i, j := range order {
		g := byJob[j]
		if _, ok := t.appOf[g.Key]; !ok {
			t.appOf[g.Key] = appKey(g)
		}
		keep[i] = saved{j.Submit, j.IterTime, j.Executed}
		j.Submit, j.Spec.App = t.arrival(s, g), t.appOf[g.Key]
		t.guessedWork(s, g, j)
		knownWork(j)
		t.measured(s, g, j, j.Executed)
	}
	defer func() {
		for i, j := range order {
			j.Submit, j.IterTime, j.Executed = keep[i].submit, keep[i].iterTime, keep[i].executed
		}
	}()
	t.vcRound++
	// A running gang this stage has no lease record of (it restarted)
	// keeps the lease its pods record: every VC policy is told it, those
	// made this round too (carry); only its own VC's reads it.
	for _, j := range order {
		g := byJob[j]
		if _, ok := t.leaseEnd[g.Key]; ok || !j.Running() {
			continue
		}
		if end := t.recorded(s, g); end > t.now {
			t.leaseEnd[g.Key] = end
			if t.carryRound != t.vcRound {
				t.carry, t.carryRound = map[int]float64{}, t.vcRound
			}
			t.carry[j.ID] = end
			for _, v := range t.vcs {
				v.pol.Honour(j.ID, end)
			}
		}
	}
	out := s.ten.place(&s.rand, snap, order, viewPlacer{s, snap})
	// Each gang's lease, as its VC's policy holds it (a gang placed
	// afresh: its grant), for its pods (pal.io/lease-until: written at its
	// bind, and a renewal by writeLeases), so that a restarted scheduler
	// keeps it.
	leases := map[int]float64{}
	for _, v := range t.vcs {
		maps.Copy(leases, v.pol.JobLeases(t.now))
	}
	for i, j := range order {
		key := byJob[j].Key
		if end, ok := leases[j.ID]; ok && (j.Running() || out[i] != nil) {
			t.leaseEnd[key] = end
		} else if out[i] == nil || !j.Running() {
			delete(t.leaseEnd, key)
		}
	}
	t.writeLeases(s, order, byJob, out)
	for k := range t.appOf {
		if snap.ByKey[k] == nil {
			delete(t.appOf, k)
			delete(t.leaseEnd, k)
			delete(t.runs, k)
		}
	}
	clear(t.rho)
	live := make(map[string]bool, len(order))
	for _, j := range order {
		live[t.appOf[byJob[j].Key]] = true
	}
	for _, v := range t.vcs {
		for app, r := range v.rho {
			// A VC whose last gang left runs no auction (its policy is
			// not called without jobs), so its last one's apps stay in
			// its record: only the apps of the round's gangs are
			// exported.
			if live[app] {
				t.rho[app] = r
			}
		}
		if vs := v.pol.Stats().Violations; len(vs) > *v.violated {
			for _, msg := range vs[*v.violated:] {
				s.log.Error("themis: policy invariant broken", "violation", msg)
			}
			*v.violated = len(vs)
		}
	}
	t.export(s)
	return out
}

// knownWork makes a job's work what Themis can bid on. The auction needs
// every app's work (iterations x iteration time x GPUs) positive and
// every job's remaining work at least 0, and a cluster's pods do not
// always say: a pod without pal.io/model has no iteration time, so each
// of its iterations counts as one second of its run (pal.io/iterations
// then reads as seconds, and without it the gang is one second's work),
// and its iterations done are the seconds it has run; a gang that ran
// past its pal.io/iterations (or within one iteration of them) counts as
// having one iteration left, as if about to end: still running, so it
// still bids for its GPUs when its lease ends.
func knownWork(j *workload.Job) {
	if !(j.IterTime > 0) {
		j.IterTime = 1
		j.Executed = max(j.Executed, j.Attained)
	}
	j.Executed = min(j.Executed, max(j.Iterations-1, 0))
}

// ReasonWorkGuessed is the event on a gang's first pod when Themis'
// figure of its work is a guess: its pods give no pal.io/iterations, or
// no pal.io/model (no time per iteration).
const ReasonWorkGuessed = "WorkGuessed"

// guessedWork says, once per gang (a Warning event on its first pod and
// a log line), that the work Themis counts for it is a guess (see
// knownWork): without pal.io/iterations the gang is one iteration of
// work, without pal.io/model each iteration is one second. Its app's ρ
// rests on that guess, and nothing else would tell the operator why ρ
// looks as it does. j is the gang's job before knownWork.
func (t *themisStage) guessedWork(s *Scheduler, g *gang, j *workload.Job) {
	if t.guessed[g.Key] {
		return
	}
	p := firstPod(g)
	if p == nil {
		return
	}
	var miss []string
	if _, ok := p.Annotations[AnnIterations]; !ok {
		miss = append(miss, "no "+AnnIterations+": Themis counts it as one iteration")
	}
	if !(j.IterTime > 0) {
		miss = append(miss, "no "+AnnModel+": each iteration counts as one second")
	}
	if len(miss) == 0 {
		return
	}
	t.guessed[g.Key] = true
	app := t.appOf[g.Key]
	note := fmt.Sprintf("%s; the work of app %s, and so its rho, rests on that guess", strings.Join(miss, ", "), app)
	s.log.Warn("themis: a gang's work is a guess", "gang", g.Key, "app", app, "why", strings.Join(miss, ", "))
	s.events.post(podRef(p), corev1.EventTypeWarning, ReasonWorkGuessed, "Scheduling", note)
}

// ClaimTolerance is how far a running gang's measured time per
// iteration may stray from what its claims predict before Themis stops
// believing them: a quarter either way (a GPU that is slower than its
// score says, input stalls and the rounds' granularity stay inside it;
// a count of iterations twice the true one does not).
const ClaimTolerance = 0.25

// ReasonWorkClaimCorrected is the event on a gang's first pod when its
// measured pace disagrees with its claimed work and Themis' ρ is computed
// on the measured figure.
const ReasonWorkClaimCorrected = "WorkClaimCorrected"

// measured checks an app's claimed work against its gangs' measured
// pace. A gang's claim (pal.io/iterations at the model's time per
// iteration) predicts a time per iteration on its GPUs: the model's times
// its slowdown there. A running gang's freshest pal.io/progress report
// (N iterations by TIME, counted from its last pod's start) measures
// one. When the two differ by more than ClaimTolerance either way, the
// claim's iterations are not the ones the gang does (a count that
// overstates the work also overstates the pace it reports) or its model
// is not what it runs, and the app's claims are scaled by the measured
// ratio: each of its gangs counts the measured time per claimed
// iteration, and its iterations done at that time (a running gang's
// reported ones on top of what its earlier runs were credited), so that
// remaining work, W and the ideal time in ρ are the measured figures,
// for the gangs that wait as for the one that reported. A report within
// the tolerance restores the claims. The first correction of each run
// posts a WorkClaimCorrected event on the gang's first pod. prior is
// what the rounds credited the gang before this round.
func (t *themisStage) measured(s *Scheduler, g *gang, j *workload.Job, prior float64) {
	if t.trustAll {
		return
	}
	app := t.appOf[g.Key]
	slow := j.PM * j.Loc
	if !(slow > 0) {
		slow = 1
	}
	var r themisRun
	iters := -1.0 // the current run's reported iterations (-1: none)
	if start, ok := lastStart(g); ok && j.Running() {
		var seen bool
		if r, seen = t.runs[g.Key]; !seen || !r.start.Equal(start) {
			r = themisRun{start: start, base: prior} // credited up to the last round: before this run
			t.runs[g.Key] = r
		}
		// A report dated past the round (a node clock ahead) is no
		// measurement (see MaxReportAhead): its run time is the clock's
		// error, and the app's work would be scaled by it.
		if n, at, from, ok := s.gangProgress(g); ok && from.Equal(start) && at.After(start) && !datedAhead(at, t.wall(t.now)) {
			run := at.Sub(start).Seconds() * t.scale
			measured := run / n // the jobs' seconds per iteration, on its GPUs
			claimed := j.IterTime * slow
			if measured <= claimed*(1+ClaimTolerance) && measured >= claimed/(1+ClaimTolerance) {
				delete(t.factor, app)
			} else {
				iters = n
				t.factor[app] = measured / claimed
				if !r.corrected {
					r.corrected = true
					t.runs[g.Key] = r
					left := j.Iterations - min(r.base*claimed/measured+n, max(j.Iterations-1, 0))
					note := fmt.Sprintf("claimed work (%s=%s at %s s per iteration on its GPUs) disagrees with the measured pace (%s: %s iterations in %s s, %s s per iteration) by more than %g%%: Themis' rho counts the measured figure for app %s, %s iterations left at %s s",
						AnnIterations, fmtFloat(j.Iterations), fmtFloat(claimed), AnnProgress, fmtFloat(n), fmtFloat(run), fmtFloat(measured),
						ClaimTolerance*100, app, fmtFloat(left), fmtFloat(measured))
					s.log.Info("themis: a gang's claimed work disagrees with its measured pace", "gang", g.Key, "app", app,
						"claimed_s_per_iter", claimed, "measured_s_per_iter", measured)
					if p := firstPod(g); p != nil {
						s.events.post(podRef(p), corev1.EventTypeNormal, ReasonWorkClaimCorrected, "Scheduling", note)
					}
				}
			}
		}
	} else {
		delete(t.runs, g.Key)
	}
	f, ok := t.factor[app]
	if !ok {
		return
	}
	// The iterations credited so far are the model's (each its time on
	// the median GPU): at f times that time per claimed iteration, they
	// are 1/f as many claimed ones.
	j.IterTime *= f
	if iters >= 0 {
		j.Executed = r.base/f + iters
	} else {
		j.Executed /= f
	}
	j.Executed = min(j.Executed, max(j.Iterations-1, 0))
}

// lastStart is the start of a bound gang's last pod (ok false: one has
// none yet).
func lastStart(g *gang) (start time.Time, ok bool) {
	for i, p := range g.Bound {
		st, has := podStart(p)
		if !has {
			return time.Time{}, false
		}
		if i == 0 || st.After(start) {
			start = st
		}
	}
	return start, len(g.Bound) > 0
}

// appKey is a gang's app: pal.io/app (annotation, then label), else its
// batch/v1 Job, else its PodGroup (native or scheduler-plugins), else the
// gang itself. Apps are per namespace.
func appKey(g *gang) string {
	p := firstPod(g)
	if p == nil {
		return g.Key
	}
	if v := strings.TrimSpace(p.Annotations[AnnApp]); v != "" {
		return p.Namespace + "/" + v
	}
	if v := strings.TrimSpace(p.Labels[AnnApp]); v != "" {
		return p.Namespace + "/" + v
	}
	if ref := metav1.GetControllerOf(p); ref != nil && ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
		return p.Namespace + "/job:" + ref.Name
	}
	if sg := p.Spec.SchedulingGroup; sg != nil && sg.PodGroupName != nil && *sg.PodGroupName != "" {
		return p.Namespace + "/podgroup:" + *sg.PodGroupName
	}
	if v := p.Labels[LabelPodGroup]; v != "" {
		return p.Namespace + "/podgroup:" + v
	}
	return g.Key
}

func firstPod(g *gang) *corev1.Pod {
	if len(g.Pending) > 0 {
		return g.Pending[0]
	}
	if len(g.Bound) > 0 {
		return g.Bound[0]
	}
	return nil
}

// arrival is the gang's creation (its earliest pod's) on the policy's
// clock; pods older than the clock count from its start. A gang evicted
// and made again by its controller arrived with its first pods (its
// job's Submit, which the evicted-work record and the bind-info keep),
// not its new ones: its app's finish-time fairness counts its wait from
// then, after a restart as before it.
func (t *themisStage) arrival(s *Scheduler, g *gang) float64 {
	first := oldestPod(slices.Concat(g.Pending, g.Bound))
	if g.Job != nil {
		if w := s.wallOf(g.Job.Submit); w.Before(first) {
			first = w
		}
	}
	return t.clock(first)
}

// place runs one round of the policy on the round's order and returns its
// answer in the order's terms, with every unexpired lease kept.
func (t *themisStage) place(s *Scheduler, snap *snapshot, order []*workload.Job, byJob map[*workload.Job]*gang, start time.Time) [][]int {
	if t.epoch.IsZero() {
		t.epoch = start
		if t.align {
			t.epoch = start.Truncate(t.period)
		}
	}
	t.now = t.clock(start)
	if err := t.build(s, snap); err != nil {
		s.log.Error("themis: cannot build the policy; nothing placed", "err", err)
		return make([][]int, len(order))
	}
	// Stand-ins: one per gang, kept through evictions.
	seen := map[string]bool{}
	inRound := make(map[string]bool, len(order))
	for _, j := range order {
		inRound[byJob[j].Key] = true
	}
	view := make([]*workload.Job, len(order))
	for i, j := range order {
		g := byJob[j]
		if uid, ok := t.owner[g.Key]; ok && t.stand[g.Key] != nil && !hasController(g, uid) {
			t.forget(g.Key) // another controller under the key (a Job applied again): it starts over
		}
		sh := t.stand[g.Key]
		if sh == nil {
			sh = t.takeOver(g, inRound)
		}
		if sh == nil {
			sh = new(workload.Job)
			*sh = *j
			sh.ID = t.next
			t.next++
			sh.Submit = t.arrival(s, g)
			t.appOf[g.Key] = appKey(g)
			t.stand[g.Key] = sh
		}
		if _, ok := t.owner[g.Key]; !ok {
			t.owner[g.Key] = controllerUID(gangPods(g))
		}
		if _, ok := t.leaseEnd[g.Key]; !ok && j.Running() {
			// Found running (the scheduler restarted): its pods say how
			// long its lease runs.
			if end := t.recorded(s, g); end > t.now {
				t.leaseEnd[g.Key] = end
				t.inherit[g.Key] = true
			}
		}
		id, submit, executed := sh.ID, sh.Submit, t.credit[g.Key]
		*sh = *j
		sh.ID, sh.Submit, sh.Spec.App = id, submit, t.appOf[g.Key]
		sh.PodGPUs = g.Spec.GPUs                // each pod's GPUs on its one node: the auction plans whole pods
		sh.Executed = max(executed, j.Executed) // progress survives a restart from a checkpoint
		t.guessedWork(s, g, sh)
		knownWork(sh)
		t.credit[g.Key] = sh.Executed
		t.measured(s, g, sh, executed)
		view[i] = sh
		seen[g.Key] = true
	}
	for k := range t.stand {
		if seen[k] {
			t.lastSeen[k] = start
			continue
		}
		// A gang between its eviction and its pods' recreation is gone
		// for a while: a StatefulSet's for a round or so, a Job's for the
		// Job controller's failure backoff (up to 6 minutes of wall time,
		// JobBackoff), rounds or no rounds. One gone for longer has left.
		if last, ok := t.lastSeen[k]; !ok {
			t.lastSeen[k] = start
		} else if start.Sub(last) > standInKeep+3*t.period {
			t.forget(k)
		}
	}
	if len(t.factor) > 0 {
		apps := map[string]bool{}
		for _, a := range t.appOf {
			apps[a] = true
		}
		for a := range t.factor {
			if !apps[a] {
				delete(t.factor, a)
			}
		}
	}
	// A lease this scheduler recorded that the policy did not grant (it
	// restarted, or the cluster changed and the policy is new) is handed
	// to the policy, so that its auctions do not offer the gang's GPUs.
	for i, j := range view {
		key := byJob[order[i]].Key
		if end := t.leaseEnd[key]; t.inherit[key] && j.Running() && end > t.now {
			if app, _ := t.pol.Lease(j.GPUsHeld[0], t.now); app != t.appOf[key] {
				t.pol.Honour(j.ID, end)
			}
		}
	}
	t.wakeOnFreed(snap)
	t.pol.Order(t.now, view)
	env := policy.Env{Cluster: snap.Cluster, Scores: s.scores, Rand: s.rand.Rand}
	out := t.pol.Place(&env, view)
	if v := t.pol.Stats().Violations; len(v) > t.violated {
		for _, msg := range v[t.violated:] {
			s.log.Error("themis: policy invariant broken", "violation", msg)
		}
		t.violated = len(v)
	}
	t.keepLeases(s, order, byJob, out)
	if s.log.Enabled(context.Background(), themisPlanLevel) {
		var b strings.Builder
		for i, j := range view {
			fmt.Fprintf(&b, " %s:%v->%v(ex %.0f)", gangName(byJob[order[i]].Key), j.GPUsHeld, out[i], j.Executed)
		}
		s.log.Log(context.Background(), themisPlanLevel, "themis plan", "t_s", t.now, "plan", b.String())
	}
	// Record the lease each placed gang now holds.
	for i, j := range order {
		key := byJob[j].Key
		if out[i] == nil {
			if !j.Running() {
				delete(t.leaseEnd, key)
				delete(t.inherit, key)
			}
			continue
		}
		// Only the gang's own app's lease counts: a gang the guard kept
		// on GPUs the policy leased to another app keeps its own end.
		if app, end := t.pol.Lease(out[i][0], t.now); app == t.appOf[key] && end > t.now {
			t.leaseEnd[key] = end
			delete(t.inherit, key) // this policy's lease now
		}
	}
	t.writeLeases(s, order, byJob, out)
	t.export(s)
	return out
}

// wakeOnFreed makes this round an auction when GPUs that a finishing
// gang held at the last round are free now. A gang leaves the round's
// order (the policy's finish event, its auction) when its first pod
// ends; its other pods free their GPUs when they end, rounds later, and
// the policy, which auctions only at a lease's end, an arrival or a
// finish, would leave those GPUs idle until the next one, with gangs
// waiting (in the simulator a job frees all its GPUs at its finish's
// auction). A gang the scheduler evicts is not finishing: the auction
// that stopped it already gave its GPUs out.
func (t *themisStage) wakeOnFreed(snap *snapshot) {
	freed := false
	for x := range t.finishing {
		if x < snap.Cluster.Size() && snap.Cluster.IsFree(x) {
			freed = true
		}
	}
	if t.finishing == nil {
		t.finishing = map[int]bool{}
	}
	clear(t.finishing)
	for _, g := range snap.Gangs {
		if g.State == state.GangLeaving && len(g.Finished) > 0 {
			for _, x := range g.GPUs {
				t.finishing[x] = true
			}
		}
	}
	if freed {
		t.pol.Wake()
	}
}

// writeLeases writes a lease a running gang won again at an expiry to
// its pods' pal.io/lease-until (its bind wrote the first), so that a
// restarted scheduler honours the renewed lease. The patches go in the
// background; a round never waits on them, and while one batch is being
// written the next round's renewals wait for the round after.
func (t *themisStage) writeLeases(s *Scheduler, order []*workload.Job, byJob map[*workload.Job]*gang, out [][]int) {
	writes := map[*corev1.Pod]string{}
	for i, j := range order {
		g := byJob[j]
		end := t.leaseEnd[g.Key]
		if !j.Running() || !(end > t.now) || !round.Same(out[i], j.GPUsHeld) {
			continue
		}
		w := t.wall(end)
		for _, p := range g.Bound {
			// The clock keeps milliseconds: a recorded end read back
			// differs from its text by less than one.
			if v, err := time.Parse(time.RFC3339Nano, p.Annotations[AnnLeaseUntil]); err != nil || v.Sub(w).Abs() >= time.Second {
				writes[p] = w.UTC().Format(time.RFC3339Nano)
			}
		}
	}
	s.annotateInBackground(&t.writing, AnnLeaseUntil, "themis: writing a renewed "+AnnLeaseUntil, writes)
}

// evicted notes that the scheduler evicts gang g: a Job of parallelism
// 1's next pod takes over its stand-in (takeOver).
func (t *themisStage) evicted(g *gang) {
	if t == nil {
		return
	}
	if wk := workKey(g.Key, g.Bound); wk != g.Key && t.stand[g.Key] != nil {
		t.byWork[wk] = g.Key
	}
}

// takeOver gives a Job of parallelism 1's new pod the stand-in of the
// Job's pod that this scheduler evicted. Such a Job's pods are gangs of
// one keyed by the pod's name, so the pod the Job controller makes after
// an eviction is a new gang; the stand-in (the policy's job: its id,
// arrival and credited progress) is the Job's, as a multi-pod gang's is
// kept for its new pods. It is moved to the new key once the evicted
// pod is out of the round; its lease and run are not (the eviction ended
// them). A pod that follows one that finished (completions above 1) is
// new work and gets a stand-in of its own. nil: none to take over.
func (t *themisStage) takeOver(g *gang, inRound map[string]bool) *workload.Job {
	p := firstPod(g)
	if p == nil || len(t.byWork) == 0 {
		return nil
	}
	wk := workKey(g.Key, []*corev1.Pod{p})
	old, ok := t.byWork[wk]
	if !ok || wk == g.Key || old == g.Key || inRound[old] || t.stand[old] == nil {
		return nil
	}
	sh, credit := t.stand[old], t.credit[old]
	t.forget(old)
	t.stand[g.Key], t.credit[g.Key], t.appOf[g.Key] = sh, credit, appKey(g)
	return sh
}

// hasController says whether one of the gang's pods has controller uid
// ("": a bare pod).
func hasController(g *gang, uid types.UID) bool {
	for _, ps := range [][]*corev1.Pod{g.Pending, g.Bound} {
		for _, p := range ps {
			if controllerUID([]*corev1.Pod{p}) == uid {
				return true
			}
		}
	}
	return false
}

// gangPods is the gang's pods, pending ones first.
func gangPods(g *gang) []*corev1.Pod {
	if len(g.Pending) > 0 {
		return g.Pending
	}
	return g.Bound
}

// forget drops what the stage holds of a gang.
func (t *themisStage) forget(k string) {
	delete(t.stand, k)
	delete(t.owner, k)
	delete(t.lastSeen, k)
	delete(t.appOf, k)
	delete(t.leaseEnd, k)
	delete(t.inherit, k)
	delete(t.runs, k)
	delete(t.credit, k)
	delete(t.guessed, k)
	for wk, key := range t.byWork {
		if key == k {
			delete(t.byWork, wk)
		}
	}
}

// keepLeases makes sure no running gang loses GPUs before its lease ends:
// such a gang keeps what it holds and any job the answer put on those
// GPUs waits. Each case is logged and counted.
func (t *themisStage) keepLeases(s *Scheduler, order []*workload.Job, byJob map[*workload.Job]*gang, out [][]int) {
	kept := map[int]bool{}
	for i, j := range order {
		g := byJob[j]
		end := t.leaseEnd[g.Key]
		if !j.Running() || !(end > t.now) || round.Same(out[i], j.GPUsHeld) {
			continue
		}
		s.metrics.LeaseRevocations.Inc()
		s.log.Error("themis: the plan would take a gang's GPUs before its lease ends; it keeps them",
			"gang", g.Key, "gpus", snapDevices(j.GPUsHeld), "lease_end_s", end, "now_s", t.now)
		out[i] = j.GPUsHeld
		for _, x := range j.GPUsHeld {
			kept[x] = true
		}
	}
	if len(kept) == 0 {
		return
	}
	for i, j := range order {
		if out[i] != nil && !round.Same(out[i], j.GPUsHeld) && slices.ContainsFunc(out[i], func(x int) bool { return kept[x] }) {
			out[i] = nil
		}
	}
}

func snapDevices(g []int) string { return fmt.Sprint(g) }

// export sets pal_app_rho for the apps of the last auction and drops the
// apps that left. An app whose gangs are all gone for a while but still
// remembered (a Job's pods in the controller's failure backoff, an evicted
// gang not yet made again: their stand-ins) is in no auction, and keeps
// its series at the ρ of the last auction it was in until its gangs are
// forgotten: it has not left, and a series that comes and goes with every
// backoff reads as an app that ended.
func (t *themisStage) export(s *Scheduler) {
	var waiting map[string]bool // apps of remembered gangs
	for k := range t.stand {
		if app := t.appOf[k]; app != "" {
			if waiting == nil {
				waiting = map[string]bool{}
			}
			waiting[app] = true
		}
	}
	for app := range t.exported {
		if _, ok := t.rho[app]; !ok && !waiting[app] {
			s.metrics.AppRho.DeleteLabelValues(labelValue(app))
			delete(t.exported, app)
		}
	}
	for app, r := range t.rho {
		s.metrics.AppRho.WithLabelValues(labelValue(app)).Set(r)
		t.exported[app] = true
	}
}

// note is the Themis part of a Scheduled event's message: the gang's app,
// its ρ at the auction that placed it and when its lease ends, both as
// wall times (RFC 3339, UTC, as pal.io/lease-until): the policy's clock
// restarts with the scheduler, so its seconds name no moment an operator
// can read.
func (t *themisStage) note(gangKey string) string {
	if t == nil {
		return ""
	}
	app := t.appOf[gangKey]
	r, ok := t.rho[app]
	if app == "" || !ok {
		return ""
	}
	msg := fmt.Sprintf("; themis app %s, rho %s at the auction at %s", app, fmtRho(r), t.wall(t.auction).UTC().Format(time.RFC3339Nano))
	if end := t.leaseEnd[gangKey]; end > 0 {
		msg += ", lease until " + t.wall(end).UTC().Format(time.RFC3339Nano)
	}
	return msg
}

func fmtRho(r float64) string {
	if math.IsInf(r, 1) {
		return "+Inf"
	}
	return fmt.Sprintf("%.3g", r)
}

// scheduledMessage is the text of a bound pod's Scheduled event.
func (s *Scheduler) scheduledMessage(node, gpus, gangKey string) string {
	return ScheduledNote(node, gpus, gangName(gangKey)) + s.th.note(gangKey)
}

// placementName is what the log calls the round's placement.
func (s *Scheduler) placementName() string {
	if s.th != nil {
		return s.th.Name() + " (the auction's GPUs)"
	}
	return s.cfg.Placement
}

// runsEmpty says whether a round with no gang to place still runs the
// policy: Themis counts contention over time, and the simulator calls it
// every round.
func (s *Scheduler) runsEmpty(snap *snapshot) bool { return s.th != nil && snap.Cluster != nil }

// themisPlanLevel is the level of the per-round plan line.
var themisPlanLevel = slog.LevelDebug

// themisMetrics registers what scheduler themis exports: each app's ρ at
// its last auction and the lease revocations the driver refused.
func themisMetrics(m *Metrics) []prometheus.Collector {
	m.AppRho = prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "pal_app_rho",
		Help: "Finish-time fairness rho of each Themis app at the last auction (+Inf: it holds no GPUs); scheduler themis only."}, []string{"app"})
	m.LeaseRevocations = prometheus.NewCounter(prometheus.CounterOpts{Name: "pal_lease_revocations_total",
		Help: "Times a round's plan would have taken GPUs from a gang before its Themis lease ended (refused: the gang kept them); should stay 0."})
	return []prometheus.Collector{m.AppRho, m.LeaseRevocations}
}
