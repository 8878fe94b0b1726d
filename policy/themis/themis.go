// Package themis drives the simulator with Themis: it is both the
// scheduler and the placer of a round, because an auction decides who runs
// and where at once. It keeps the leases: GPUs won in an auction are held
// for the lease length and never taken back early; an auction runs at the
// first round boundary after a lease expiry, a job finish or an app
// arrival, over the GPUs that are free or whose lease has expired. Between
// auctions every job keeps what it holds.
//
// Elastic jobs (workload.Spec.MaxGPUs) bid and are water-filled from their
// minimum up to their most GPUs; their GPU count changes only when their
// lease ends.
//
// Rounds quantise those events: with 60 s rounds an app arriving at
// t = 130 s is served at 180 s, and a lease granted at 180 s for 600 s
// expires at 780 s, which is a round boundary, so leases end on time.
package themis

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// DefaultLease is Themis' lease, 10 minutes.
const DefaultLease = 600.0

// DefaultRound is the round length used with Themis: shorter than the
// lease, so auctions happen close to the events that trigger them.
const DefaultRound = 60.0

// Config is a Themis run's knobs.
type Config struct {
	Lease   float64 // seconds; 0 means DefaultLease
	Auction fairness.Options
	// Models gives each job's placement sensitivity (nil: the default
	// table).
	Models *workload.Models
	// RemainingNoise p multiplies each app's remaining-work estimate by a
	// factor drawn once per app from U(1−p, 1+p) with Seed.
	RemainingNoise float64
	// Seed drives that noise and, unless Auction.Seed is set, the
	// randomized payments.
	Seed uint64
	// Misreport makes apps lie in their bids (the truthfulness
	// experiment): app name → x, the app reports its placement slowdown
	// inflated by x (spread factor S reported as S/(1+x)).
	Misreport map[string]float64
	// Levels, when set, give the cluster the Themis authors' slot /
	// machine / rack levels (the cluster's nodes must be its machines);
	// nil: machines are the nodes, without slots or racks.
	Levels *fairness.Levels
	// KeepRunning is for a driver that never moves a running job
	// (pal-kube's tenancy stage keeps a running gang on the GPUs it
	// holds): an auction's running job chosen again on other GPUs keeps
	// its own, and its app's lease is granted on those; a job planned on
	// them gets nothing (and no lease) this auction. Without it the
	// policy leased the GPUs it planned while the job ran on others: its
	// app held no lease on its GPUs, and another app's lease on them.
	KeepRunning bool
	// OnAuction, when set, sees every auction's inputs and outcome as the
	// policy holds it (for tests and traces; it must not keep or change
	// them: the policy reuses the apps between auctions).
	OnAuction func(in fairness.Input, res *fairness.Result)
}

// Validate rejects impossible knobs.
func (c Config) Validate() error {
	if c.Lease < 0 || math.IsNaN(c.Lease) || math.IsInf(c.Lease, 0) {
		return fmt.Errorf("--lease %v: must be a positive number of seconds", c.Lease)
	}
	if !(c.RemainingNoise >= 0 && c.RemainingNoise < 1) {
		return fmt.Errorf("--remaining-noise %v: want 0 <= p < 1", c.RemainingNoise)
	}
	for a, x := range c.Misreport {
		if !(x >= 0) || math.IsInf(x, 0) {
			return fmt.Errorf("misreport of app %s: inflation must be finite and >= 0, got %v", a, x)
		}
	}
	return nil
}

// Honour tells the policy that job id, running on the GPUs it holds at
// the next Place, is on a lease until end that this policy did not grant:
// a driver that made a fresh policy (it restarted, or its cluster
// changed and the GPUs were numbered again) and kept the leases of the
// old one. At that job's next auction its GPUs are leased to its app
// until end, so they are not offered while the lease runs. A GPU another
// app holds a lease on here is left as it is, and an end not after the
// round's time says nothing.
func (p *Policy) Honour(id int, end float64) {
	if p.honour == nil {
		p.honour = map[int]float64{}
	}
	p.honour[id] = end
}

// JobLeases is the lease end of each running job of the last auction
// whose GPUs its app still holds a lease on at now, of each job that
// auction gave GPUs while it was not running (its grant, which a driver
// records with the job's start), and of each job the driver told it to
// honour that it has not seen since: what a driver that replaces this
// policy with a fresh one (its cluster's numbering changed, or it
// restarted) hands the new one through Honour.
func (p *Policy) JobLeases(now float64) map[int]float64 {
	out := map[int]float64{}
	for id, end := range p.honour {
		if end > now {
			out[id] = end
		}
	}
	if p.leases == nil {
		return out
	}
	for id, g := range p.launching {
		if a := p.jobApp[id]; a != nil && len(g) > 0 && p.leases.Holder(g[0], now) == a.idx {
			if end := p.leases.End(g[0]); end > now {
				out[id] = end
			}
		}
	}
	for _, j := range p.prevOrder {
		a := p.jobApp[j.ID]
		if a == nil || !j.Running() || j.GPUsHeld[0] >= p.topo.NumGPUs() || p.leases.Holder(j.GPUsHeld[0], now) != a.idx {
			continue
		}
		if end := p.leases.End(j.GPUsHeld[0]); end > now {
			out[j.ID] = end
		}
	}
	return out
}

// Wake makes the next Place an event round (an auction) although no
// lease expired and no job arrived or finished: for a driver whose jobs
// free their GPUs after they leave the order. pal-kube's gang leaves the
// round's order when its first pod ends, and its other pods free their
// GPUs rounds later; without a wake those GPUs would stay idle until
// the next event, where the simulator's finishing job frees all of its
// GPUs at the finish's event. The simulator never calls it.
func (p *Policy) Wake() { p.wake = true }

// Stats are what the policy saw over a run.
type Stats struct {
	Auctions int
	// PlacementScore is the GPU-weighted mean of S(G) over every job-round
	// that ran (1 = every job inside one machine).
	PlacementScore float64
	// LeaseChanges counts job launches, migrations and resumptions the
	// auctions caused (each would cost a checkpoint/restore).
	LeaseChanges int
	// KeptWithoutGain counts running jobs whose lease ended that an
	// auction planned on as many other GPUs, no faster, and that kept
	// their own instead (no move without gain); MovesWithoutGain those
	// that moved all the same: a job planned on some of the GPUs they
	// held could not take theirs instead (it spans other GPUs too, runs
	// slower there or its pods do not fit).
	KeptWithoutGain, MovesWithoutGain int
	// KeptFromIdling counts running gangs whose lease ended that an
	// auction left without GPUs, their eviction leaving more of them
	// idle than it put to use, and that kept them instead (no eviction
	// into idleness).
	KeptFromIdling int
	// Violations lists broken invariants (should be empty): a lease taken
	// back early, a GPU given twice.
	Violations []string
}

// Policy is Themis as a simulator scheduler and placer.
type Policy struct {
	cfg    Config
	lease  float64
	models *workload.Models
	now    float64
	last   float64
	leases *fairness.Leases
	topo   *fairness.Topology
	// scores are those topo's speeds are from: a Place whose Env brings
	// others (learnt scores, a GPU quarantined) gives them to the bids.
	scores *policy.Scores
	apps   map[string]*app
	byIdx  []*app
	jobApp map[int]*app
	active []*app // apps with jobs, in first-seen order
	sawAny bool
	// prevOrder is the last event round's jobs: an unchanged list means
	// no arrival and no finish.
	prevOrder  []*workload.Job
	nextExpiry float64
	// launching is the jobs the last auction gave GPUs while they were
	// not running: a driver that cannot carry a launch out at once (the
	// Kubernetes driver waits for an evicted gang's pods to leave) shows
	// them still waiting at the next round, which then runs an auction
	// instead of leaving their GPUs idle until the next lease expiry.
	launching map[int][]int // job id -> the GPUs granted
	// honour is the leases a driver recorded for running jobs that this
	// policy did not grant (see Honour), by job id: their ends.
	honour     map[int]float64
	wake       bool    // the next Place is an event (see Wake)
	hidden     []bool  // InVC: the GPUs the stage hid at the last call
	contention float64 // ∫ (apps alive) dt
	owner      []int   // scratch for check

	placementSum, placementGPUs float64
	curPlacement, curGPUs       float64 // this allocation's Σ S(G)·|G| and Σ |G|
	stats                       Stats
}

type app struct {
	idx       int
	name      string
	arrival   float64
	firstSeen float64            // the round it was first seen
	f0        float64            // the contention integral then
	work      float64            // W: ideal GPU-seconds of every job seen
	demand    int                // Σ gang sizes of every job seen (each job's latest)
	jobMost   map[int]int        // each job's gang size in demand, by job id
	critical  float64            // longest job's ideal run time
	lastRan   float64            // last event round it held GPUs (arrival until then)
	fa        fairness.App       // its auction view, reused between auctions
	jobWork   map[int][2]float64 // each job's share of work and its ideal run time, by job id
	jobs      []*workload.Job    // this round's active jobs
	pos       []int              // their positions in the round's order
	noise     float64
}

// count adds a job's work to its app's W, its ideal run time to the
// app's longest and its size to the app's demand, or updates them when
// the job's figures changed since (a driver that learns a job's true
// pace corrects its iteration time: W and T_id follow, so that ρ is
// computed on one figure throughout).
func (a *app) count(j *workload.Job) {
	// A driver's job may change size (a Kubernetes Job's parallelism
	// raised): the app's demand, which caps its bundles, follows.
	if m := j.Most(); a.jobMost[j.ID] != m {
		if a.jobMost == nil {
			a.jobMost = map[int]int{}
		}
		a.demand += m - a.jobMost[j.ID]
		a.jobMost[j.ID] = m
	}
	w := j.Iterations * j.IterTime * float64(j.GPUs)
	// An elastic job is fastest on all its GPUs.
	c := w / float64(j.Most())
	old, seen := a.jobWork[j.ID]
	if seen && old == [2]float64{w, c} {
		return
	}
	if a.jobWork == nil {
		a.jobWork = map[int][2]float64{}
	}
	a.jobWork[j.ID] = [2]float64{w, c}
	a.work += w - old[0]
	if c >= a.critical {
		a.critical = c
		return
	}
	if seen && old[1] == a.critical {
		a.critical = 0
		for _, x := range a.jobWork {
			a.critical = max(a.critical, x[1])
		}
	}
}

// New builds the policy. Scores (may be nil) make bids variability-aware.
func New(cfg Config) (*Policy, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	p := &Policy{cfg: cfg, lease: cmp.Or(cfg.Lease, DefaultLease), models: cfg.Models, apps: map[string]*app{}, jobApp: map[int]*app{}, launching: map[int][]int{}}
	if p.models == nil {
		p.models = workload.DefaultModels()
	}
	if p.cfg.Auction.Metric == nil {
		p.cfg.Auction.Metric = fairness.Themis{}
	}
	if p.cfg.Auction.Seed == 0 {
		p.cfg.Auction.Seed = cfg.Seed // the payment draws follow the run's seed
	}
	return p, nil
}

// Name implements policy.Scheduler and policy.Placer.
func (p *Policy) Name() string { return "themis" }

// Sticky implements policy.Placer: jobs keep their GPUs while leased.
func (p *Policy) Sticky() bool { return true }

// Order implements policy.Scheduler: the auction decides, so the order is
// the simulator's (arrival order); Order only records the round's time
// for Place.
func (p *Policy) Order(now float64, jobs []*workload.Job) []*workload.Job {
	p.now = now
	return jobs
}

// PaymentSeed is the seed of the randomized hidden payments' draws.
func (p *Policy) PaymentSeed() uint64 { return p.cfg.Auction.Seed }

// Lease is the app holding GPU g at now and when that lease ends ("" and
// 0 when g is free or its lease has expired). A driver that carries the
// answer out by slower means than the simulator (evicting pods) checks
// against it that no job loses GPUs before its lease ends.
func (p *Policy) Lease(g int, now float64) (app string, end float64) {
	if p.leases == nil || g < 0 || g >= p.topo.NumGPUs() {
		return "", 0
	}
	h := p.leases.Holder(g, now)
	if h < 0 {
		return "", 0
	}
	return p.byIdx[h].name, p.leases.End(g)
}

// Stats returns the run's statistics so far.
func (p *Policy) Stats() Stats {
	s := p.stats
	if p.placementGPUs > 0 {
		s.PlacementScore = p.placementSum / p.placementGPUs
	}
	s.Violations = slices.Clone(p.stats.Violations)
	return s
}

// AppOf is the app key of a job: its app column, or the job itself.
func AppOf(s *workload.Spec) string { return fairness.AppName(s) }

func (p *Policy) setup(c *cluster.Cluster, sc *policy.Scores) error {
	t, err := Topology(c, p.cfg.Levels)
	if err != nil {
		return err
	}
	if t, err = p.withScores(t, sc); err != nil {
		return err
	}
	p.topo, p.scores = t, sc
	p.leases = fairness.NewLeases(c.Size())
	return nil
}

// withScores is topology t with sc's speeds (t itself when sc is nil or
// the auction is variability-blind).
func (p *Policy) withScores(t *fairness.Topology, sc *policy.Scores) (*fairness.Topology, error) {
	if sc == nil || p.cfg.Auction.VariabilityBlind {
		return t, nil
	}
	var sf [variability.NumClasses][]float64
	for k := range sf {
		sf[k] = sc.SF[k]
	}
	return t.WithSpeeds(sf)
}

// SetScores gives the bids new GPU speeds on the same GPUs (a driver
// whose scores are learnt, or a GPU quarantined, while the policy runs),
// keeping the leases, apps and contention. Before the first Place it does
// nothing: Place takes the Env's scores then. Place calls it whenever
// its Env's scores are not those the bids have, so a driver that hands
// each round's scores in the Env need not.
func (p *Policy) SetScores(sc *policy.Scores) error {
	if p.topo == nil || sc == p.scores {
		return nil
	}
	t, err := p.withScores(p.topo, sc)
	if err != nil {
		return err
	}
	p.topo, p.scores = t, sc
	return nil
}

// Topology is the cluster's topology for bids: its nodes as machines,
// with l's slots and racks when l is set (l must describe the cluster).
func Topology(c *cluster.Cluster, l *fairness.Levels) (*fairness.Topology, error) {
	if l == nil {
		return fairness.FromCluster(c)
	}
	if c.NumNodes() != l.Machines() || c.Size() != l.Machines()*l.GPUsPerMachine() {
		return nil, fmt.Errorf("topology %s has %d machines of %d GPUs, the cluster is %s", l, l.Machines(), l.GPUsPerMachine(), c)
	}
	t, err := fairness.LevelTopology(*l)
	if err != nil {
		return nil, err
	}
	for g := range c.Size() {
		if t.MachineOf(g) != c.NodeOf(g) {
			return nil, fmt.Errorf("topology %s: GPU %d is on machine %d, the cluster puts it on node %d", l, g, t.MachineOf(g), c.NodeOf(g))
		}
	}
	return t, nil
}

// SensitivityOf is a model's placement sensitivity from the model table:
// its slot, spread (machine) and rack factors.
func SensitivityOf(m *workload.Models, model string) fairness.Sensitivity {
	spread, rack := m.Sensitivity(model)
	return fairness.Sensitivity{Machine: spread, Rack: rack, Slot: m.SlotFactor(model)}
}

func (p *Policy) violate(format string, args ...any) {
	if len(p.stats.Violations) < 100 {
		p.stats.Violations = append(p.stats.Violations, fmt.Sprintf("t=%g: ", p.now)+fmt.Sprintf(format, args...))
	}
}

// Place implements policy.Placer.
func (p *Policy) Place(env *policy.Env, order []*workload.Job) [][]int {
	T := p.now
	cl := env.Cluster
	if p.topo == nil {
		if err := p.setup(cl, env.Scores); err != nil {
			panic("themis: " + err.Error()) // the simulator validated the cluster
		}
	} else if err := p.SetScores(env.Scores); err != nil {
		panic("themis: " + err.Error()) // the same GPUs, so the same sizes
	}
	// F = ∫ (apps alive) dt, for every app's N_avg.
	p.contention += float64(len(p.active)) * (T - p.last)
	p.last = T
	event := !p.sawAny || p.wake || T >= p.nextExpiry || len(order) != len(p.prevOrder)
	p.sawAny, p.wake = true, false
	if !event {
		for i, j := range order {
			if j != p.prevOrder[i] {
				event = true // a job arrived or finished
				break
			}
			if p.launching[j.ID] != nil && !j.Running() {
				event = true // a grant the driver did not carry out
				break
			}
		}
	}
	out := make([][]int, len(order))
	if !event {
		for i, j := range order {
			if j.Running() {
				out[i] = j.GPUsHeld
			}
		}
		p.placementSum += p.curPlacement
		p.placementGPUs += p.curGPUs
		return out
	}
	p.prevOrder = append(p.prevOrder[:0], order...)
	for _, a := range p.active {
		a.jobs, a.pos = a.jobs[:0], a.pos[:0]
	}
	var active []*app
	for i, j := range order {
		a := p.jobApp[j.ID]
		if a == nil {
			key := AppOf(&j.Spec)
			if a = p.apps[key]; a == nil {
				a = &app{idx: len(p.apps), name: key, arrival: j.Submit, firstSeen: T, f0: p.contention}
				a.noise = fairness.NoiseFactor(p.cfg.RemainingNoise, p.cfg.Seed, uint64(a.idx))
				p.apps[key] = a
				p.byIdx = append(p.byIdx, a)
			}
			p.jobApp[j.ID] = a
			a.arrival = min(a.arrival, j.Submit)
		}
		a.count(j)
		if len(a.jobs) == 0 {
			active = append(active, a)
			if a.lastRan < a.arrival {
				a.lastRan = a.arrival
			}
		}
		if j.Running() {
			a.lastRan = T
		}
		a.jobs = append(a.jobs, j)
		a.pos = append(a.pos, i)
	}
	p.active = active
	// Leases of finished jobs end with them: a GPU that is free, or that
	// a running job of another app holds while the lease's app has no job
	// left (a driver's view whose GPUs passed from a job that ended to
	// one that was running elsewhere: HiveD gives a VC's cell freed by a
	// finished gang to the VC's lazily preempted gang, which keeps
	// running where it runs).
	holds := make([]int, cl.Size()) // app index + 1 of the running job on each GPU
	for _, j := range order {
		for _, g := range j.GPUsHeld {
			if g >= 0 && g < len(holds) {
				holds[g] = p.jobApp[j.ID].idx + 1
			}
		}
	}
	for g := range cl.Size() {
		h := p.leases.Holder(g, T)
		if h < 0 {
			continue
		}
		if cl.IsFree(g) || holds[g] != 0 && holds[g] != h+1 && len(p.byIdx[h].jobs) == 0 {
			if err := p.leases.Release(h, []int{g}); err != nil {
				p.violate("%v", err)
			}
		}
	}
	// Leases the driver kept from an earlier policy.
	for _, j := range order {
		end, ok := p.honour[j.ID]
		if !ok {
			continue
		}
		delete(p.honour, j.ID)
		if !j.Running() || !(end > T) || math.IsInf(end, 0) {
			continue
		}
		idx := p.jobApp[j.ID].idx
		if slices.ContainsFunc(j.GPUsHeld, func(g int) bool { h := p.leases.Holder(g, T); return h >= 0 && h != idx }) {
			continue
		}
		if err := p.leases.Grant(idx, j.GPUsHeld, T, end-T); err != nil {
			p.violate("%v", err)
		}
	}
	leased := func(j *workload.Job) bool {
		return j.Running() && p.leases.Holder(j.GPUsHeld[0], T) == p.jobApp[j.ID].idx
	}
	p.stats.Auctions++
	clear(p.launching)
	mustKeep := make([]bool, len(order)) // jobs on unexpired leases, before any grant
	for i, j := range order {
		mustKeep[i] = leased(j)
	}
	in := fairness.Input{Topo: p.topo, Now: T, ActiveApps: len(active)}
	offered := make([]bool, cl.Size())
	for g := range cl.Size() {
		if cl.IsFree(g) {
			offered[g] = true
		}
	}
	for i, j := range order {
		if j.Running() && !mustKeep[i] {
			for _, g := range j.GPUsHeld {
				offered[g] = true
			}
		}
	}
	for g, ok := range offered {
		if ok {
			in.Offer = append(in.Offer, g)
		}
	}
	// A job whose pods may not span nodes (PodGPUs) bids only when the
	// offer holds its pods whole (a running job's own GPUs are offered
	// when its lease ends): the auction's bundles are GPUs, and it would
	// win GPUs on several nodes that no pod of it can use, and hold a
	// lease on them while it waits.
	podSlots := map[int]int{} // pod size -> whole pods the offer holds
	fits := func(j *workload.Job) bool {
		if j.PodGPUs <= 0 || j.Elastic() {
			return true
		}
		n, ok := podSlots[j.PodGPUs]
		if !ok {
			for _, nd := range cl.Nodes {
				k := 0
				for _, g := range nd.GPUs {
					if offered[g] {
						k++
					}
				}
				n += k / j.PodGPUs
			}
			podSlots[j.PodGPUs] = n
		}
		return n*j.PodGPUs >= j.GPUs
	}
	for _, a := range active {
		sens := SensitivityOf(p.models, a.jobs[0].Model)
		if x := p.cfg.Misreport[a.name]; x > 0 {
			sens.Machine, sens.Rack = sens.Machine/(1+x), sens.Rack/(1+x)
			if sens.Slot != 0 {
				sens.Slot /= 1 + x
			}
		}
		jobs := a.fa.Jobs[:0]
		a.fa = fairness.App{Name: a.name, Arrival: a.arrival, TotalWork: a.work, Demand: a.demand,
			Sens: sens, Class: a.jobs[0].Class, Noise: a.noise, Critical: a.critical, Since: a.lastRan}
		fa := &a.fa
		if T > a.firstSeen {
			fa.NAvg = (p.contention - a.f0) / (T - a.firstSeen)
		} else {
			fa.NAvg = float64(len(active))
		}
		fa.Jobs = jobs
		for k, j := range a.jobs {
			fj := fairness.Job{ID: j.ID, Remaining: (j.Iterations - j.Executed) * j.IterTime * float64(j.GPUs), MaxGPUs: j.Most(), Gang: !j.Elastic()}
			if j.Elastic() {
				fj.MinGPUs = j.GPUs
			}
			fj.Unplaceable = !mustKeep[a.pos[k]] && !fits(j)
			if mustKeep[a.pos[k]] {
				fj.Held = j.GPUsHeld
				// [D] An elastic job's GPU set changes only when its
				// lease ends: while leased it neither grows nor shrinks,
				// so every GPU it holds keeps one lease.
				fj.MaxGPUs = max(len(j.GPUsHeld), 1)
			} else if j.Running() {
				fj.Prev = j.GPUsHeld
			}
			fa.Jobs = append(fa.Jobs, fj)
		}
		in.Apps = append(in.Apps, fa)
	}
	res, err := fairness.Run(in, p.cfg.Auction)
	if err != nil {
		panic("themis: " + err.Error()) // inputs built above are consistent
	}
	if p.cfg.OnAuction != nil {
		p.cfg.OnAuction(in, res)
	}
	var taken []bool // GPUs a pod's repair may not use (see below)
	type grant struct {
		a     *app
		k     int     // the job's index in a.jobs
		lease float64 // its length
	}
	var grants []grant // made once every app's jobs are planned
	for x, a := range active {
		ar := res.Apps[x]
		gained := map[int]bool{}
		for _, g := range ar.Gained {
			gained[g] = true
		}
		// Jobs that lost their lease and were chosen again keep their old
		// GPUs when the app won them back, instead of migrating.
		var chosen []int
		for k, j := range a.jobs {
			i := a.pos[k]
			switch {
			case mustKeep[i]:
				out[i] = j.GPUsHeld
			case len(ar.Jobs[k]) > 0:
				chosen = append(chosen, k)
			}
		}
		used := map[int]bool{}
		var later []int
		for _, k := range chosen {
			j := a.jobs[k]
			if j.Running() && allIn(j.GPUsHeld, gained) && len(j.GPUsHeld) == len(ar.Jobs[k]) {
				out[a.pos[k]] = j.GPUsHeld
				mark(used, j.GPUsHeld)
			} else {
				later = append(later, k)
			}
		}
		var rest []int
		for _, k := range later {
			g := ar.Jobs[k]
			if !anyIn(g, used) {
				out[a.pos[k]] = g
				mark(used, g)
			} else {
				rest = append(rest, k)
			}
		}
		for _, k := range rest {
			var free []int
			for _, g := range ar.Gained {
				if !used[g] {
					free = append(free, g)
				}
			}
			g := p.topo.Pack(free, len(ar.Jobs[k]))
			out[a.pos[k]] = g
			mark(used, g)
		}
		// Pods kept whole: a chosen job whose GPUs do not split into its
		// pods per node is re-cut from its app's gains and the offered
		// GPUs no app won; if none fits it gets nothing (and no lease).
		for _, k := range chosen {
			j, i := a.jobs[k], a.pos[k]
			if j.PodGPUs <= 0 || out[i] == nil || place.PodsFit(cl, out[i], j.PodGPUs) {
				continue
			}
			if taken == nil {
				taken = make([]bool, cl.Size())
				for g := range taken {
					taken[g] = !offered[g]
				}
				for _, r := range res.Apps {
					mark2(taken, r.Gained)
				}
			}
			for _, g := range out[i] {
				used[g] = false
			}
			for _, g := range ar.Gained {
				taken[g] = used[g] // the app's other jobs keep theirs
			}
			fixed := place.RepairPods(cl, taken, out[i], j.PodGPUs)
			out[i] = fixed
			mark(used, fixed)
			mark2(taken, fixed)
		}
		lease := p.lease
		if s := ar.LeaseShare; s > 0 && s < 1 {
			lease *= s // the payment in lease time
		}
		for _, k := range chosen {
			grants = append(grants, grant{a, k, lease})
		}
	}
	p.keepWithoutGain(cl, order, out, mustKeep, offered)
	for _, i := range p.keepFromIdling(order, out, mustKeep, offered) {
		j := order[i]
		if err := p.leases.Grant(p.jobApp[j.ID].idx, out[i], T, p.lease); err != nil {
			p.violate("%v", err)
		}
	}
	if p.cfg.KeepRunning {
		p.keepRunning(order, out)
	}
	for _, gr := range grants {
		j := gr.a.jobs[gr.k]
		g := out[gr.a.pos[gr.k]]
		if g == nil {
			continue // its pods fit nowhere (see above), or it waits for a kept job
		}
		if err := p.leases.Grant(gr.a.idx, g, T, gr.lease); err != nil {
			p.violate("%v", err)
		}
		if !slices.Equal(g, j.GPUsHeld) {
			p.stats.LeaseChanges++
		}
		// A running job moved is launched on its new GPUs too: a driver
		// that stops it first (the Kubernetes driver evicts the gang's
		// pods and binds the new ones once they are gone) shows it
		// waiting at the next round, which then auctions again instead
		// of leaving its new GPUs idle until the next event. The
		// simulator moves it at once, so it runs at the next round.
		if !j.Running() || !place.SameGPUs(g, j.GPUsHeld) {
			p.launching[j.ID] = g
		}
	}
	for i, j := range order {
		if j.Running() && !mustKeep[i] && out[i] != nil && !place.SameGPUs(out[i], j.GPUsHeld) && p.noGain(j, out[i]) {
			p.stats.MovesWithoutGain++
		}
	}
	p.check(order, out, mustKeep)
	p.account(order, out)
	p.nextExpiry = p.leases.NextExpiry(T)
	return out
}

// keepWithoutGain is the rule "no move without gain": a running job whose
// lease ended, planned on as many other GPUs on which it runs no faster
// (its placement factor over its slowest GPU's score no higher than on
// the GPUs it holds), keeps those it holds, and its app's lease is
// granted on them. The auction chooses among bundles of equal value by
// machine order (the tightest fit, the lowest id), not by where a job
// runs, and a move costs the job a checkpoint and a restart (on
// Kubernetes an eviction, a bind and the controller's backoff) and buys
// it nothing. Jobs planned on some of its GPUs take as many of the GPUs
// it was planned on instead (exchange), keeping the rest of their plan,
// when each runs there at least as fast and its pods fit; otherwise the
// move stands. Every app ends with as many GPUs, of the same worth (the
// auction's outcome is unchanged: only which of equal GPUs), and the GPUs
// the job leaves unused stay free for the next auction. A move onto
// more GPUs, or onto faster ones (inside one machine instead of across
// two, or GPUs that score better), stands.
func (p *Policy) keepWithoutGain(cl *cluster.Cluster, order []*workload.Job, out [][]int, mustKeep, offered []bool) {
	var planned []int // on each GPU, the index + 1 of the job planned on it
	for i, j := range order {
		if mustKeep[i] || !j.Running() || out[i] == nil || place.SameGPUs(out[i], j.GPUsHeld) || !p.noGain(j, out[i]) {
			continue
		}
		if planned == nil {
			planned = make([]int, len(offered))
			for x, g := range out {
				for _, y := range g {
					planned[y] = x + 1
				}
			}
		}
		if slices.ContainsFunc(j.GPUsHeld, func(g int) bool { return g < 0 || g >= len(offered) || !offered[g] }) {
			continue
		}
		// back: the GPUs it takes back; away: those it leaves, in order.
		back := slices.DeleteFunc(slices.Clone(j.GPUsHeld), func(g int) bool { return slices.Contains(out[i], g) })
		away := slices.DeleteFunc(slices.Clone(out[i]), func(g int) bool { return slices.Contains(j.GPUsHeld, g) })
		slices.Sort(back)
		slices.Sort(away)
		others, swapped := p.exchange(cl, order, out, planned, back, away)
		if swapped == nil {
			continue // the move stands
		}
		for _, g := range out[i] {
			planned[g] = 0
		}
		for x, k := range others {
			out[k] = swapped[x]
			for _, g := range out[k] {
				planned[g] = k + 1
			}
		}
		out[i] = slices.Clone(j.GPUsHeld)
		for _, g := range out[i] {
			planned[g] = i + 1
		}
		p.stats.KeptWithoutGain++
	}
}

// exchangeBudget caps the GPU sets exchange tries for one kept job: the
// search is over subsets, and a large gang's move with several jobs
// planned on its GPUs could otherwise take longer than the auction. A
// search cut short leaves the move standing (counted in MovesWithoutGain).
const exchangeBudget = 4096

// exchange finds, for the jobs planned on some of GPUs back (those a
// job kept without gain takes back), GPUs among away (those it was
// planned on and leaves) to take instead of them: each such job keeps
// the rest of its plan and takes as many of away as it had of back,
// none given twice, on which it runs at least as fast as planned (its
// rate, as noGain reads it: |G| x placement factor over the slowest
// GPU) and its pods fit. A job planned partly on back and partly
// elsewhere (a 20-GPU gang over five nodes, one of them the kept job's)
// is served too: the kwok trial that found the case saw a 4-GPU gang
// moved from one node to another, for nothing, so that a 20-GPU gang
// planned on five nodes, one the first's, could start. It returns the
// jobs (indices in order) and their new GPUs, or nil sets when there is
// no such exchange (or none within exchangeBudget). Each job first tries
// its GPUs GPU for GPU (back's i-th for away's i-th, the order of both
// sorted), then every subset of away, those on the machines it keeps
// GPUs on and on machines with the most of away first.
func (p *Policy) exchange(cl *cluster.Cluster, order []*workload.Job, out [][]int, planned []int, back, away []int) ([]int, [][]int) {
	type taker struct {
		k      int
		keep   []int   // its planned GPUs outside back
		need   int     // its planned GPUs in back
		direct []int   // away's GPUs at back's positions of those
		rate   float64 // its planned rate
		pod    int     // its pods' GPUs (0: any split)
	}
	var ts []taker
	for _, g := range back {
		k := planned[g] - 1
		if k < 0 || slices.ContainsFunc(ts, func(t taker) bool { return t.k == k }) {
			continue
		}
		t := taker{k: k, rate: p.jobRate(order[k], out[k])}
		if o := order[k]; o.PodGPUs > 0 && !o.Elastic() {
			t.pod = o.PodGPUs
		}
		for _, x := range out[k] {
			if at := slices.Index(back, x); at >= 0 {
				t.need++
				t.direct = append(t.direct, away[at])
			} else {
				t.keep = append(t.keep, x)
			}
		}
		ts = append(ts, t)
	}
	// The largest needs first: they have the fewest ways to be served.
	slices.SortStableFunc(ts, func(a, b taker) int { return b.need - a.need })
	sets := make([][]int, len(ts))
	used := make(map[int]bool, len(away))
	budget := exchangeBudget
	try := func(t *taker, add []int) []int {
		budget--
		set := slices.Concat(t.keep, add)
		slices.Sort(set)
		if t.pod > 0 && !place.PodsFit(cl, set, t.pod) || p.jobRate(order[t.k], set) < t.rate*(1-1e-12) {
			return nil
		}
		return set
	}
	var solve func(x int) bool
	solve = func(x int) bool {
		if x == len(ts) {
			return true
		}
		t := &ts[x]
		take := func(set, add []int) bool {
			mark(used, add)
			sets[x] = set
			if solve(x + 1) {
				return true
			}
			for _, g := range add {
				used[g] = false
			}
			return false
		}
		if !anyIn(t.direct, used) {
			if set := try(t, t.direct); set != nil && take(set, t.direct) {
				return true
			}
		}
		// The free GPUs of away, on its machines first, then on the
		// machines with the most of them.
		mine := map[int]bool{}
		for _, g := range t.keep {
			mine[cl.NodeOf(g)] = true
		}
		left := map[int]int{}
		var cand []int
		for _, g := range away {
			if !used[g] {
				cand = append(cand, g)
				left[cl.NodeOf(g)]++
			}
		}
		slices.SortStableFunc(cand, func(a, b int) int {
			na, nb := cl.NodeOf(a), cl.NodeOf(b)
			if mine[na] != mine[nb] {
				if mine[na] {
					return -1
				}
				return 1
			}
			return cmp.Or(left[nb]-left[na], na-nb, a-b)
		})
		pick := make([]int, 0, t.need)
		var choose func(from int) bool
		choose = func(from int) bool {
			if budget <= 0 {
				return false
			}
			if len(pick) == t.need {
				if slices.Equal(pick, t.direct) {
					return false // tried above
				}
				set := try(t, pick)
				return set != nil && take(set, slices.Clone(pick))
			}
			for c := from; c <= len(cand)-(t.need-len(pick)); c++ {
				pick = append(pick, cand[c])
				if choose(c + 1) {
					return true
				}
				pick = pick[:len(pick)-1]
			}
			return false
		}
		return choose(0)
	}
	if !solve(0) {
		return nil, nil
	}
	ks := make([]int, len(ts))
	for x, t := range ts {
		ks[x] = t.k
	}
	return ks, sets
}

// keepFromIdling is the rule "no eviction into idleness": a running gang
// whose lease ended and that the plan gives no GPUs keeps those it holds
// when its eviction would leave more of them idle than it puts to use:
// when the jobs planned on some of its GPUs were all waiting and are
// planned on fewer GPUs in all (its own and others) than the gang's GPUs
// the plan leaves idle. A gang runs on all of its GPUs or on none: the
// auction offers the GPUs of a gang whose lease ended to the worst-off
// bidders and gives the rest to the leftovers, but when a winner takes
// some of them no other gang may fit in what is left (a 1-GPU gang that
// wins one GPU of a 16-GPU gang's sixteen leaves fifteen that nobody can
// use). Themis' leftover allocation is work-conserving: it leaves no GPU
// idle that an app can use, and the gang could use its own. The jobs
// planned there wait (no GPUs, no lease) and bid again at the next
// auction; a running job planned there is not stopped for it, and an
// eviction that puts as many GPUs to use as it idles stands (Themis
// time-shares GPUs among apps by leases). It returns the indices of the
// gangs kept; their apps' leases are granted on the GPUs they hold.
func (p *Policy) keepFromIdling(order []*workload.Job, out [][]int, mustKeep, offered []bool) []int {
	var planned []int // on each GPU, the index + 1 of the job planned on it
	var kept []int
	for i, j := range order {
		if mustKeep[i] || !j.Running() || j.Elastic() || out[i] != nil {
			continue
		}
		if slices.ContainsFunc(j.GPUsHeld, func(g int) bool { return g < 0 || g >= len(offered) || !offered[g] }) {
			continue
		}
		if planned == nil {
			planned = make([]int, len(offered))
			for x, g := range out {
				for _, y := range g {
					planned[y] = x + 1
				}
			}
		}
		var others []int // the jobs planned on some of its GPUs
		idle, used := 0, 0
		for _, g := range j.GPUsHeld {
			k := planned[g] - 1
			switch {
			case k < 0:
				idle++
			case !slices.Contains(others, k):
				others = append(others, k)
				used += len(out[k])
			}
		}
		if used >= idle || slices.ContainsFunc(others, func(k int) bool { return order[k].Running() }) {
			continue
		}
		for _, k := range others {
			for _, g := range out[k] {
				planned[g] = 0
			}
			out[k] = nil
		}
		out[i] = slices.Clone(j.GPUsHeld)
		for _, g := range out[i] {
			planned[g] = i + 1
		}
		kept = append(kept, i)
		p.stats.KeptFromIdling++
	}
	return kept
}

// noGain says whether GPUs g are no gain to running job j: as many as it
// holds, on which it runs no faster. (An elastic job given more GPUs
// gains; one given fewer cannot keep what it holds.)
func (p *Policy) noGain(j *workload.Job, g []int) bool {
	return len(g) == len(j.GPUsHeld) && p.jobRate(j, g) <= p.jobRate(j, j.GPUsHeld)*(1+1e-12)
}

// jobRate is job j's rate on GPUs g: |g| times its model's placement
// factor there (the true one: a placement-blind auction or a misreport
// does not make a move onto a better placement any less of a gain), over
// the slowest GPU's score when the bids count speeds.
func (p *Policy) jobRate(j *workload.Job, g []int) float64 {
	a := fairness.App{Sens: SensitivityOf(p.models, j.Model), Class: j.Class, Jobs: []fairness.Job{{Held: g}}}
	return fairness.Rate(p.topo, &a)
}

// keepRunning is the driver's keeping of running jobs in a plan
// (Config.KeepRunning): a running job planned on other GPUs keeps those
// it holds, and a job planned on them gets nothing.
func (p *Policy) keepRunning(order []*workload.Job, out [][]int) {
	kept := map[int]bool{}
	for i, j := range order {
		if !j.Running() || out[i] == nil || place.SameGPUs(out[i], j.GPUsHeld) {
			continue
		}
		out[i] = slices.Clone(j.GPUsHeld)
		mark(kept, j.GPUsHeld)
	}
	if len(kept) == 0 {
		return
	}
	for i, j := range order {
		if out[i] != nil && !(j.Running() && place.SameGPUs(out[i], j.GPUsHeld)) && anyIn(out[i], kept) {
			out[i] = nil
		}
	}
}

// check verifies the round's invariants: no GPU given twice, gangs whole,
// and every job on an unexpired lease keeps exactly its GPUs.
func (p *Policy) check(order []*workload.Job, out [][]int, mustKeep []bool) {
	if len(p.owner) != p.topo.NumGPUs() {
		p.owner = make([]int, p.topo.NumGPUs())
	}
	for g := range p.owner {
		p.owner[g] = -1
	}
	for i, j := range order {
		g := out[i]
		if g != nil && !j.Fits(len(g)) {
			p.violate("job %d: needs %d..%d GPUs, given %d", j.ID, j.GPUs, j.Most(), len(g))
		}
		for _, x := range g {
			if o := p.owner[x]; o >= 0 {
				p.violate("GPU %d given to jobs %d and %d", x, o, j.ID)
			}
			p.owner[x] = j.ID
		}
		if mustKeep[i] && !slices.Equal(g, j.GPUsHeld) {
			p.violate("job %d lost GPUs %v before its lease ended", j.ID, j.GPUsHeld)
		}
	}
}

// account adds the round's placement scores and remembers them for the
// rounds until the next auction.
func (p *Policy) account(order []*workload.Job, out [][]int) {
	p.curPlacement, p.curGPUs = 0, 0
	for i, j := range order {
		if g := out[i]; len(g) > 0 {
			p.curPlacement += p.topo.Placement(g, SensitivityOf(p.models, j.Model)) * float64(len(g))
			p.curGPUs += float64(len(g))
		}
	}
	p.placementSum += p.curPlacement
	p.placementGPUs += p.curGPUs
}

func allIn(g []int, set map[int]bool) bool {
	for _, x := range g {
		if !set[x] {
			return false
		}
	}
	return true
}

func anyIn(g []int, set map[int]bool) bool {
	for _, x := range g {
		if set[x] {
			return true
		}
	}
	return false
}

func mark(set map[int]bool, g []int) {
	for _, x := range g {
		set[x] = true
	}
}

func mark2(set []bool, g []int) {
	for _, x := range g {
		set[x] = true
	}
}

// Now is the time of the round being placed (what Order last recorded).
func (p *Policy) Now() float64 { return p.now }

// InVC is Themis as one virtual cluster's placer under a tenancy stage
// (HiveD): a policy of the VC's own, whose apps, leases and contention are
// the VC's and whose cluster is the VC's view of its cells, on the round's
// clock (the stage calls a VC's placer without ordering first).
type InVC struct {
	*Policy
	Clock func() float64
}

// Sticky implements policy.Placer. A VC's Themis is called every round,
// even when none of its jobs waits: leases expire and a lost auction stops
// a running job.
func (v InVC) Sticky() bool { return false }

// Place implements policy.Placer. A VC's view is a shape only (the stage
// keeps no owners on it), so the policy gets a copy on which the VC's
// running jobs hold their GPUs: what is free there is what it may offer.
func (v InVC) Place(env *policy.Env, order []*workload.Job) [][]int {
	return v.PlaceHiding(env, order, nil)
}

// hiddenOwner holds a VC view's hidden GPUs on the policy's copy.
const hiddenOwner = math.MaxInt32

// PlaceHiding implements policy.HidingPlacer: the stage's hidden GPUs (a
// driver's job whose pods are leaving holds them) are taken on the
// policy's copy, so they are neither offered nor released, and the view
// keeps its numbering, which the policy's leases are in (a sub-cluster
// without them, renumbered, had the policy read its leases against other
// GPUs). When a GPU hidden at the last call is free now, the leaving job
// has gone since: this round is an auction (Wake), as the driver's own
// wake makes it without tenancy; such a job left the order (its finish
// event, its auction) while it still held them.
func (v InVC) PlaceHiding(env *policy.Env, order []*workload.Job, hidden func(int) bool) [][]int {
	v.Policy.Order(v.Clock(), order)
	e := *env
	e.Cluster = env.Cluster.Clone()
	for _, j := range order {
		if j.Running() {
			if err := e.Cluster.Assign(j.ID, j.GPUsHeld); err != nil {
				v.Policy.violate("VC view: %v", err)
			}
		}
	}
	p := v.Policy
	for x, was := range p.hidden {
		if was && x < e.Cluster.Size() && e.Cluster.IsFree(x) && (hidden == nil || !hidden(x)) {
			p.Wake()
			break
		}
	}
	p.hidden = p.hidden[:0]
	if hidden != nil {
		p.hidden = slices.Grow(p.hidden, e.Cluster.Size())[:e.Cluster.Size()]
		var hide []int
		for x := range p.hidden {
			p.hidden[x] = hidden(x) && e.Cluster.IsFree(x)
			if p.hidden[x] {
				hide = append(hide, x)
			}
		}
		if len(hide) > 0 {
			if err := e.Cluster.Assign(hiddenOwner, hide); err != nil {
				p.violate("VC view: %v", err)
			}
		}
	}
	return p.Place(&e, order)
}
