// Package baseline holds the schedulers the Themis paper compares against
// that decide at once who runs and on how many GPUs: Gandiva's fairness
// variant, SLAQ, Optimus, and the Themis authors' own Tiresias and Gandiva
// (tiresias-blind, gandiva-score; see pergpu.go). Each is both the
// simulator's scheduler and its placer, like Themis.
//
// The Themis authors' simulator runs every baseline the same way: each
// free GPU, in cluster order, is auctioned on its own lease among the
// jobs holding fewer than their max_parallelism GPUs, so an elastic job
// grows GPU by GPU to its most; the policies differ only in the bid
// (Tiresias: least attained GPU service, placement-blind; Gandiva: the
// effective speed-up |G|·S(G) after the grant; SLAQ: the loss drop over a
// lease; Optimus: the cut in expected running time, S(G) included).
// tiresias-blind and gandiva-score follow that scheme. gandiva-fair,
// slaq and optimus below are ours: whole-cluster plans at lease ends that
// count GPUs placement-blind and then pack, which spares them the
// authors' placement-blind GPU-by-GPU scatter.
//
// gandiva-fair, slaq and optimus work under the same leases: every Lease
// seconds they re-plan the whole cluster (who runs, on how many GPUs);
// between leases running jobs keep their GPUs and waiting jobs start, at
// their minimum, on GPUs that free up (work-conserving, never preempting).
//
// What each decides at a lease, and where we simplify:
//
//   - gandiva-fair is Gandiva's fair variant (Gandiva_fair: equal shares
//     between users, by time-slicing and migration, with Gandiva's
//     packing). Apps are the users and have equal tickets: the app with
//     the least GPU time attained so far goes first, round-robin, one job
//     (at its minimum) per app per pass, then one extra GPU per app per
//     pass to its elastic jobs. We drop Gandiva's introspection
//     (profiling, packing jobs onto shared GPUs): one job per GPU.
//   - slaq is SLAQ's quality-driven allocation: GPUs go one step at a time
//     to the job whose normalised loss would drop most over the next
//     lease per GPU. We have no loss curves, so every job's loss follows
//     one model, L(f) = 1/(1 + 9f) at the fraction f of its iterations
//     done (a convex curve ending at a tenth of the start: [D]); new jobs
//     therefore gain most, as in SLAQ.
//   - optimus is Optimus' marginal-gain allocation: first every job that
//     fits, shortest remaining time first (Optimus gives each job its
//     minimum before it scales any), then each spare GPU to the elastic
//     job whose remaining time it shortens most. Optimus fits a speed
//     curve online; we use the simulator's linear one (k GPUs run k/min
//     times as fast), placement-blind.
//
// Those three count GPUs placement-blind and then place packed: a job that
// keeps its GPU count keeps its GPUs, a resized job keeps what it can,
// new jobs take the tightest machine that fits (fairness.Topology.Pack).
// The simulator charges whatever placement results.
package baseline

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/fairness"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// Names are the policies this package builds.
func Names() []string {
	return []string{"gandiva-fair", "slaq", "optimus", "tiresias-blind", "gandiva-score"}
}

// Is reports whether name is one of Names.
func Is(name string) bool { return slices.Contains(Names(), name) }

// DefaultLease is the lease the Themis paper gives every scheduler, 10
// minutes.
const DefaultLease = 600.0

// Config is one policy's knobs.
type Config struct {
	Name  string  // one of Names
	Lease float64 // seconds; 0: DefaultLease
	// Levels give the cluster the authors' slot / machine / rack levels
	// for packing (nil: the cluster's nodes as machines).
	Levels *fairness.Levels
	// Models give gandiva-score the slowdowns it bids on (nil: the
	// default model table).
	Models *workload.Models
}

// SLAQLossDrop is the loss model's K in L(f) = 1/(1 + K·f).
const SLAQLossDrop = 9.0

// Policy is one baseline as the simulator's scheduler and placer.
type Policy struct {
	cfg       Config
	lease     float64
	now       float64
	nextLease float64
	started   bool
	topo      *fairness.Topology
	service   map[string]float64 // app → GPU-seconds attained (gandiva-fair)
	counted   map[int]float64    // job → its GPU-seconds already in service
	firstSeen map[string]int     // app → first-seen rank, for ties
	// The per-GPU baselines (pergpu.go): each GPU's lease end, and each
	// job's last assignment (for ties).
	leaseEnd   []float64
	lastAssign map[int]float64
}

// New builds a baseline.
func New(cfg Config) (*Policy, error) {
	if !Is(cfg.Name) {
		return nil, fmt.Errorf("unknown baseline %q (known: %s)", cfg.Name, strings.Join(Names(), ", "))
	}
	if cfg.Lease < 0 || math.IsNaN(cfg.Lease) || math.IsInf(cfg.Lease, 0) {
		return nil, fmt.Errorf("--lease %v: must be a positive number of seconds", cfg.Lease)
	}
	if cfg.Models == nil {
		cfg.Models = workload.DefaultModels()
	}
	return &Policy{cfg: cfg, lease: cmp.Or(cfg.Lease, DefaultLease), service: map[string]float64{}, counted: map[int]float64{}, firstSeen: map[string]int{}}, nil
}

// Name implements policy.Scheduler and policy.Placer.
func (p *Policy) Name() string { return p.cfg.Name }

// Sticky implements policy.Placer: between leases jobs keep their GPUs.
func (p *Policy) Sticky() bool { return true }

// Order implements policy.Scheduler: the plan decides, so the order is
// the simulator's (arrival order); Order records the round's time.
func (p *Policy) Order(now float64, jobs []*workload.Job) []*workload.Job {
	p.now = now
	return jobs
}

func appOf(s *workload.Spec) string {
	if s.App != "" {
		return s.App
	}
	return fmt.Sprintf("job-%d", s.ID)
}

func (p *Policy) setup(c *cluster.Cluster) error {
	if p.cfg.Levels == nil {
		t, err := fairness.FromCluster(c)
		p.topo = t
		return err
	}
	l := p.cfg.Levels
	if c.NumNodes() != l.Machines() || c.Size() != l.Machines()*l.GPUsPerMachine() {
		return fmt.Errorf("topology %s does not describe the cluster %s", l, c)
	}
	t, err := fairness.LevelTopology(*l)
	p.topo = t
	return err
}

// Place implements policy.Placer.
func (p *Policy) Place(env *policy.Env, order []*workload.Job) [][]int {
	if p.topo == nil {
		if err := p.setup(env.Cluster); err != nil {
			panic("baseline: " + err.Error()) // the caller validated the cluster
		}
	}
	for _, j := range order {
		a := appOf(&j.Spec)
		if _, ok := p.firstSeen[a]; !ok {
			p.firstSeen[a] = len(p.firstSeen)
		}
		p.service[a] += j.GPUService - p.counted[j.ID]
		p.counted[j.ID] = j.GPUService
	}
	if perGPU(p.cfg.Name) {
		return p.auction(env.Cluster, order)
	}
	if !p.started || p.now >= p.nextLease {
		p.started = true
		p.nextLease = p.now + p.lease
		return p.replan(env.Cluster, order)
	}
	return p.fill(env.Cluster, order)
}

// fill keeps every running job where it is and starts waiting jobs, at
// their minimum, on the free GPUs, in the policy's start order.
func (p *Policy) fill(c *cluster.Cluster, order []*workload.Job) [][]int {
	out := make([][]int, len(order))
	var waiting []int
	for i, j := range order {
		if j.Running() {
			out[i] = j.GPUsHeld
		} else {
			waiting = append(waiting, i)
		}
	}
	free := c.FreeGPUs(nil)
	for _, i := range p.startOrder(order, waiting) {
		if n := order[i].GPUs; n <= len(free) {
			g := p.topo.Pack(free, n)
			out[i] = g
			free = without(free, g)
		}
	}
	return out
}

// startOrder is the order in which the policy starts waiting jobs between
// leases: gandiva-fair by app service, slaq by loss drop per GPU, optimus
// by remaining time.
func (p *Policy) startOrder(order []*workload.Job, idx []int) []int {
	key := func(i int) float64 {
		j := order[i]
		switch p.cfg.Name {
		case "gandiva-fair":
			return p.service[appOf(&j.Spec)]
		case "slaq":
			return -p.lossGain(j, 0, j.GPUs) / float64(j.GPUs)
		}
		return remaining(j)
	}
	out := slices.Clone(idx)
	slices.SortStableFunc(out, func(a, b int) int { return cmp.Compare(key(a), key(b)) })
	return out
}

// remaining is a job's remaining time on its minimum GPUs.
func remaining(j *workload.Job) float64 { return (j.Iterations - j.Executed) * j.IterTime }

// progress is the fraction of its iterations j does in a lease on n GPUs.
func (p *Policy) progress(j *workload.Job, n int) float64 {
	return p.lease * float64(n) / (float64(j.GPUs) * j.IterTime * j.Iterations)
}

func loss(f float64) float64 { return 1 / (1 + SLAQLossDrop*min(f, 1)) }

// lossGain is SLAQ's predicted loss drop over a lease from growing j
// from `from` to `to` GPUs.
func (p *Policy) lossGain(j *workload.Job, from, to int) float64 {
	f := j.Executed / j.Iterations
	return loss(f+p.progress(j, from)) - loss(f+p.progress(j, to))
}

// counts is each job's GPU count for the next lease.
func (p *Policy) counts(order []*workload.Job, total int) []int {
	n := make([]int, len(order))
	left := total
	start := func(i int) bool {
		if g := order[i].GPUs; n[i] == 0 && g <= left {
			n[i], left = g, left-g
			return true
		}
		return false
	}
	grow := func(i int) bool {
		if j := order[i]; n[i] > 0 && n[i] < j.Most() && left > 0 {
			n[i]++
			left--
			return true
		}
		return false
	}
	all := make([]int, len(order))
	for i := range all {
		all[i] = i
	}
	switch p.cfg.Name {
	case "gandiva-fair":
		// Apps by attained service (ties: first seen), each app's jobs in
		// arrival order; round-robin one job per app per pass.
		byApp := map[string][]int{}
		var apps []string
		for i, j := range order {
			a := appOf(&j.Spec)
			if byApp[a] == nil {
				apps = append(apps, a)
			}
			byApp[a] = append(byApp[a], i)
		}
		slices.SortStableFunc(apps, func(a, b string) int {
			if c := cmp.Compare(p.service[a], p.service[b]); c != 0 {
				return c
			}
			return cmp.Compare(p.firstSeen[a], p.firstSeen[b])
		})
		next := map[string]int{}
		for changed := true; changed && left > 0; {
			changed = false
			for _, a := range apps {
				for next[a] < len(byApp[a]) {
					i := byApp[a][next[a]]
					next[a]++
					if start(i) {
						changed = true
						break
					}
				}
			}
		}
		for changed := true; changed && left > 0; {
			changed = false
			for _, a := range apps {
				for _, i := range byApp[a] {
					if grow(i) {
						changed = true
						break
					}
				}
			}
		}
	case "optimus":
		for _, i := range p.startOrder(order, all) {
			start(i)
		}
		for left > 0 {
			best, gain := -1, 0.0
			for i, j := range order {
				if n[i] == 0 || n[i] >= j.Most() {
					continue
				}
				// Remaining time on n GPUs is R·min/n: one more saves
				// R·min·(1/n − 1/(n+1)).
				g := remaining(j) * float64(j.GPUs) * (1/float64(n[i]) - 1/float64(n[i]+1))
				if g > gain {
					best, gain = i, g
				}
			}
			if best < 0 || !grow(best) {
				break
			}
		}
	case "slaq":
		for left > 0 {
			best, gain := -1, 0.0
			for i, j := range order {
				var g float64
				switch {
				case n[i] == 0 && j.GPUs <= left:
					g = p.lossGain(j, 0, j.GPUs) / float64(j.GPUs)
				case n[i] > 0 && n[i] < j.Most():
					g = p.lossGain(j, n[i], n[i]+1)
				default:
					continue
				}
				if g > gain {
					best, gain = i, g
				}
			}
			if best < 0 {
				break
			}
			if n[best] == 0 {
				start(best)
			} else {
				grow(best)
			}
		}
	}
	return n
}

// replan gives every job its count for the next lease and places it:
// jobs that keep their count keep their GPUs, shrinking jobs keep a
// prefix, growing jobs add packed GPUs, new jobs are packed, largest
// first.
func (p *Policy) replan(c *cluster.Cluster, order []*workload.Job) [][]int {
	n := p.counts(order, c.Size())
	out := make([][]int, len(order))
	used := make([]bool, c.Size())
	for i, j := range order {
		if j.Running() && n[i] > 0 {
			keep := j.GPUsHeld[:min(n[i], len(j.GPUsHeld))]
			out[i] = keep
			for _, g := range keep {
				used[g] = true
			}
		}
	}
	freeList := func() []int {
		var f []int
		for g, u := range used {
			if !u {
				f = append(f, g)
			}
		}
		return f
	}
	var grow, fresh []int
	for i, j := range order {
		switch {
		case n[i] == 0:
		case !j.Running():
			fresh = append(fresh, i)
		case n[i] > len(j.GPUsHeld):
			grow = append(grow, i)
		}
	}
	slices.SortStableFunc(fresh, func(a, b int) int { return cmp.Compare(n[b], n[a]) })
	for _, i := range append(grow, fresh...) {
		extra := p.topo.Pack(freeList(), n[i]-len(out[i]))
		for _, g := range extra {
			used[g] = true
		}
		g := append(slices.Clone(out[i]), extra...)
		slices.Sort(g)
		out[i] = g
	}
	return out
}

func without(free, g []int) []int {
	out := free[:0:0]
	for _, x := range free {
		if !slices.Contains(g, x) {
			out = append(out, x)
		}
	}
	return out
}
