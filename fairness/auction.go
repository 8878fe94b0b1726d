package fairness

import (
	"cmp"
	"fmt"
	"math"
	"slices"

	"github.com/palsched/pal/internal/quote"
)

var inf = math.Inf(1)

// Leftover says who gets GPUs that nobody won or that winners paid back.
type Leftover int

const (
	// NonbiddersFirst hands leftovers to the apps that did not bid (worst
	// off first), then back to the bidders: work-conserving (§1.8 [D]).
	NonbiddersFirst Leftover = iota
	// BiddersOnly hands leftovers back to the bidders only.
	BiddersOnly
	// NoLeftover leaves them idle until the next auction.
	NoLeftover
	// Reauction auctions leftovers again, as the authors' simulator does:
	// the knob picks the worst-off of the apps that still want GPUs (ρ on
	// what they hold now), they bid on what is left, the proportional-fair
	// allocation (without payments) is handed out, and apps that win
	// nothing drop out; it repeats until no GPU or no app is left. Apps
	// that paid a hidden payment in this auction take part only once the
	// others are done (else they would buy their payment straight back).
	Reauction
)

func (l Leftover) String() string {
	switch l {
	case NonbiddersFirst:
		return "nonbidders-first"
	case BiddersOnly:
		return "bidders-only"
	case NoLeftover:
		return "none"
	case Reauction:
		return "reauction"
	}
	return fmt.Sprintf("Leftover(%d)", int(l))
}

// ParseLeftover accepts the String forms.
func ParseLeftover(s string) (Leftover, error) {
	for _, l := range []Leftover{NonbiddersFirst, BiddersOnly, NoLeftover, Reauction} {
		if s == l.String() {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown leftover rule %s (want nonbidders-first, bidders-only, none or reauction)", quote.Value(s))
}

// Options are the auction's knobs.
type Options struct {
	Knob Knob
	// Payment is how a winner pays 1 − c_i of its bundle.
	Payment Payment
	// Seed drives PayRandom's draws (with the auction's time and the
	// app's name).
	Seed     uint64
	Leftover Leftover
	// Valuation is what bids maximise the product of (1/ρ by default).
	Valuation Valuation
	Metric    Metric // nil: Themis
	// PlacementBlind bids as if S ≡ 1 (ablation); VariabilityBlind ignores
	// PM-scores in bids (ablation, and the Themis paper's own bids).
	PlacementBlind   bool
	VariabilityBlind bool
	// MaxBids caps the bids (sizes) per app; 0 means DefaultMaxBids.
	MaxBids int
}

// DefaultMaxBids is the bid cap per app: an app with more useful sizes
// bids at 32 sizes spread over its range.
const DefaultMaxBids = 32

// MaxNow is the latest auction time accepted, in seconds (2³² s, about
// 136 years): float64 resolves times there to under a microsecond, so a
// microsecond of remaining time still moves ρ. Past it, elapsed time
// swallows the remaining-time term and every bid looks alike.
const MaxNow = 1 << 32

// DefaultOptions are f = 0.8 (the paper's), hidden payments on (kept in
// expectation by randomized rounding), leftovers re-auctioned among the
// next worst-off (the authors' rule), bids valued by effective speed-up
// (homogeneous, so PA's guarantees hold; the authors' bid value), the
// Themis metric, placement- and variability-aware bids.
//
// Measured on the default reproduction workload over workload seeds 1-5
// and 42 (max ρ, payments on): leftovers to non-bidders first give
// 1.36-5.35 (seed 5: the withheld gangs go to better-off apps), the
// re-auction 1.30-1.50 with 1/ρ bids and 1.11-1.43 with speed-up bids.
func DefaultOptions() Options {
	return Options{Knob: DefaultKnob, Payment: PayRandom, Leftover: Reauction, Valuation: ValueSpeedup, Metric: Themis{}}
}

// Input is one auction: the apps (with the GPUs they hold on unexpired
// leases in their jobs' Held) and the GPUs on offer.
type Input struct {
	Topo  *Topology
	Now   float64
	Apps  []*App
	Offer []int
	// ActiveApps is m for Gavel's metric (0: len(Apps)).
	ActiveApps int
}

// AppResult is what the auction decided for one app.
type AppResult struct {
	Rho    float64 // ρ before the auction, on held GPUs only
	Wants  bool    // counted in n: it can use more GPUs
	Bidder bool
	PF     []int   // its bundle in the proportional-fair allocation
	Keep   float64 // c_i (bidders only)
	Kept   []int   // the part of PF it keeps after the hidden payment
	// LeaseShare is the fraction of the lease Kept is held for: c_i under
	// PayLease, else 1.
	LeaseShare float64
	Gained     []int // every new GPU it ends with (kept plus leftovers)
	Final      []int // held plus gained, ascending
	// Jobs is each job's new GPUs (the water-fill split of Gained).
	Jobs [][]int
}

// Result is one auction's outcome.
type Result struct {
	N, K     int   // apps wanting GPUs, bidders
	Bidders  []int // app indices, worst-off first
	Apps     []AppResult
	Leftover []int // offered GPUs nobody got
	// Reauctions counts the extra rounds the Reauction rule held.
	Reauctions int
}

// auction is one Run's working state.
type auction struct {
	t       *Topology
	in      Input
	opt     Options
	ctx     Context
	pl      *pool
	speeds  bool
	held    [][]int
	holding []*App // apps with their gains so far
	gained  [][]int
	jobs    [][][]int
	scr     scratch // every bidder's (see scratch)
}

func (s *auction) sens(i int) Sensitivity {
	if s.opt.PlacementBlind {
		return Insensitive
	}
	return s.in.Apps[i].Sens
}

// bidderOf is app i as it stands now (its gains so far included).
func (s *auction) bidderOf(i, limit int) *bidder {
	var h []int
	if s.holding[i] == s.in.Apps[i] {
		h = s.held[i]
	}
	return newBidder(s.holding[i], i, s.ctx, s.opt.Metric, limit, s.sens(i), s.speeds, h, &s.scr)
}

// grant gives app i bundle (p grants' worth) from the pool.
func (s *auction) grant(b *bidder, p int, bundle []int) {
	i := b.index
	s.pl.remove(bundle)
	split := cloneLists(b.split(s.t, p, bundle))
	s.holding[i] = withGPUs(s.holding[i], split)
	s.gained[i] = append(s.gained[i], bundle...)
	s.jobs[i] = addJobs(s.jobs[i], split)
}

// pfRound holds the bidding among ids (app indices, worst-off first) on
// the pool: bids, the proportional-fair choice of sizes and the packing,
// larger bundles first, then worst-off first. It removes the bundles from
// the pool and returns each bidder's bundle and grant count, the bidders
// and, for the payments, the tables and choices.
func (s *auction) pfRound(ids []int, withKeep bool) (pf [][]int, grants []int, bs []*bidder, keep []float64) {
	bs = make([]*bidder, len(ids))
	tables := make([][]option, len(ids))
	for x, i := range ids {
		bs[x] = s.bidderOf(i, s.pl.size)
		tables[x] = bidTable(bs[x], s.pl, cmp.Or(s.opt.MaxBids, DefaultMaxBids), s.opt.Valuation)
	}
	choice, keep := proportionalFair(tables, s.pl.size, withKeep)
	order := make([]int, len(ids))
	for x := range order {
		order[x] = x
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Compare(tables[y][choice[y]].n, tables[x][choice[x]].n)
	})
	pf = make([][]int, len(ids))
	grants = make([]int, len(ids))
	for _, x := range order {
		o := tables[x][choice[x]]
		if o.n == 0 {
			continue
		}
		bundle, _ := bs[x].best(s.pl, o.p)
		pf[x] = slices.Clone(bundle)
		grants[x] = o.p
		s.pl.remove(pf[x])
	}
	return
}

// Run holds one auction. It checks that no GPU is held twice or both held
// and offered, and never returns a GPU twice.
func Run(in Input, opt Options) (*Result, error) {
	t := in.Topo
	if t == nil {
		return nil, fmt.Errorf("auction: no topology")
	}
	if !(in.Now >= 0 && in.Now <= MaxNow) {
		return nil, fmt.Errorf("auction: time %v s is outside 0..%d s (past that, ρ cannot tell bids apart)", in.Now, int64(MaxNow))
	}
	if opt.Metric == nil {
		opt.Metric = Themis{}
	}
	owner := make([]int, t.NumGPUs())
	for i := range owner {
		owner[i] = -1
	}
	held := make([][]int, len(in.Apps))
	for i, a := range in.Apps {
		if err := a.Validate(); err != nil {
			return nil, err
		}
		held[i] = a.Held()
		for _, g := range held[i] {
			if g < 0 || g >= len(owner) {
				return nil, fmt.Errorf("auction: app %s holds GPU %d, the cluster has %d", a.Name, g, len(owner))
			}
			if owner[g] != -1 {
				return nil, fmt.Errorf("auction: GPU %d held twice (apps %s and %s)", g, in.Apps[owner[g]].Name, a.Name)
			}
			owner[g] = i
		}
	}
	for _, g := range in.Offer {
		if g < 0 || g >= len(owner) {
			return nil, fmt.Errorf("auction: offered GPU %d, the cluster has %d", g, len(owner))
		}
		if owner[g] == -2 {
			return nil, fmt.Errorf("auction: GPU %d offered twice", g)
		}
		if owner[g] >= 0 {
			return nil, fmt.Errorf("auction: GPU %d is offered but held by app %s", g, in.Apps[owner[g]].Name)
		}
		owner[g] = -2
	}
	owner = nil
	s := &auction{t: t, in: in, opt: opt, held: held, speeds: !opt.VariabilityBlind && t.hasSpeeds,
		holding: slices.Clone(in.Apps), gained: make([][]int, len(in.Apps)), jobs: make([][][]int, len(in.Apps))}
	s.ctx = Context{Now: in.Now, ClusterGPUs: t.NumGPUs(), ActiveApps: in.ActiveApps}
	if s.ctx.ActiveApps == 0 {
		s.ctx.ActiveApps = len(in.Apps)
	}
	s.pl = newPool(t, in.Offer)
	res := &Result{Apps: make([]AppResult, len(in.Apps))}
	rho := make([]float64, len(in.Apps))
	since := make([]float64, len(in.Apps))
	var wanting []int
	for i, a := range in.Apps {
		b := s.bidderOf(i, 0)
		rho[i] = b.rho(b.currentRate(t))
		since[i] = a.Arrival
		if a.Since > 0 {
			since[i] = a.Since
		}
		res.Apps[i].Rho = rho[i]
		res.Apps[i].LeaseShare = 1
		if wantsMore(a, s.pl.size) {
			res.Apps[i].Wants = true
			wanting = append(wanting, i)
		}
	}
	res.N = len(wanting)
	res.K = opt.Knob.Bidders(res.N)
	wr := make([]float64, len(wanting))
	wa := make([]float64, len(wanting))
	for x, i := range wanting {
		wr[x], wa[x] = rho[i], since[i]
	}
	for _, x := range WorstOff(wr, wa, res.K) {
		res.Bidders = append(res.Bidders, wanting[x])
		res.Apps[wanting[x]].Bidder = true
	}

	// Bids: one per useful size, each on the app's best bundle from the
	// whole offer; the arbiter picks sizes with the max product of the
	// valuations.
	pf, grants, bs, keep := s.pfRound(res.Bidders, true) // c_i is reported even with payments off

	// Hidden payments: keep a c_i share of the bundle.
	paid := make([]bool, len(in.Apps))
	for x, i := range res.Bidders {
		c := 1.0
		if keep != nil {
			c = keep[x]
		}
		ar := &res.Apps[i]
		ar.Keep = c
		ar.PF = sortedCopy(pf[x])
		if len(pf[x]) == 0 {
			continue
		}
		b := bs[x]
		p0 := grants[x]
		p := p0
		switch opt.Payment {
		case PayFloor:
			keepN := int(math.Floor(c*float64(len(pf[x])) + 1e-9))
			for p > 0 && b.cum[p] > keepN {
				p--
			}
		case PayRandom:
			p = roundGrants(b.cum, p0, c, paymentDraw(opt.Seed, in.Now, in.Apps[i].Name))
		case PayLease:
			if !(c > 0) {
				p = 0
			} else if c < 1 {
				ar.LeaseShare = c
			}
		}
		var kept []int
		switch {
		case p == p0:
			kept = pf[x]
		case p > 0:
			sub := newPool(t, pf[x])
			kept, _ = b.best(sub, p)
		}
		ar.Kept = sortedCopy(kept)
		if len(kept) < len(pf[x]) {
			paid[i] = true
			withheld := make([]int, 0, len(pf[x])-len(kept))
			for _, g := range pf[x] {
				if !slices.Contains(kept, g) {
					withheld = append(withheld, g)
				}
			}
			s.pl.add(withheld)
		}
		if len(kept) > 0 {
			s.grant(b, p, kept)
		}
	}

	// Leftovers.
	give := func(i int) {
		if s.pl.size == 0 || !wantsMore(s.holding[i], s.pl.size) {
			return
		}
		b := s.bidderOf(i, s.pl.size)
		cur := b.utility(t, 0, nil)
		bestP, bestU := 0, cur
		var bestB []int
		for _, p := range bidSizes(b.cum, cmp.Or(opt.MaxBids, DefaultMaxBids)) {
			bundle, u := b.best(s.pl, p)
			if bundle != nil && u > bestU*(1+1e-12) {
				bestP, bestU, bestB = p, u, slices.Clone(bundle)
			}
		}
		if bestP == 0 {
			return
		}
		s.grant(b, bestP, bestB)
	}
	byRank := func(keep func(i int) bool) []int {
		var ids []int
		for _, i := range wanting {
			if keep(i) {
				ids = append(ids, i)
			}
		}
		r := make([]float64, len(ids))
		a := make([]float64, len(ids))
		for x, i := range ids {
			r[x], a[x] = rho[i], since[i]
		}
		out := WorstOff(r, a, len(ids))
		for x := range out {
			out[x] = ids[out[x]]
		}
		return out
	}
	bidder := func(i int) bool { return res.Apps[i].Bidder }
	switch opt.Leftover {
	case NonbiddersFirst:
		for _, i := range byRank(func(i int) bool { return !bidder(i) }) {
			give(i)
		}
		for _, i := range byRank(bidder) {
			give(i)
		}
	case BiddersOnly:
		for _, i := range byRank(bidder) {
			give(i)
		}
	case Reauction:
		res.Reauctions += s.reauction(func(i int) bool { return !paid[i] })
		res.Reauctions += s.reauction(func(i int) bool { return paid[i] })
	}
	res.Leftover = s.pl.gpus()
	for i := range in.Apps {
		ar := &res.Apps[i]
		ar.Gained = sortedCopy(s.gained[i])
		ar.Final = append(held[i], ar.Gained...)
		slices.Sort(ar.Final)
		if s.jobs[i] == nil {
			s.jobs[i] = make([][]int, len(in.Apps[i].Jobs))
		}
		for j := range s.jobs[i] {
			slices.Sort(s.jobs[i][j])
		}
		ar.Jobs = s.jobs[i]
	}
	return res, nil
}

// reauction auctions the pool again among the apps in scope that still
// want GPUs, worst-off first by their ρ on what they hold now, until the
// pool or the apps run out; an app that wins nothing in a round drops out.
// It returns the rounds held.
func (s *auction) reauction(scope func(i int) bool) int {
	dropped := make([]bool, len(s.in.Apps))
	rounds := 0
	for s.pl.size > 0 {
		var cand []int
		var r, a []float64
		for i := range s.in.Apps {
			if dropped[i] || !scope(i) || !wantsMore(s.holding[i], s.pl.size) {
				continue
			}
			b := s.bidderOf(i, 0)
			cand = append(cand, i)
			r = append(r, b.rho(Rate(s.t, s.holding[i])))
			since := s.in.Apps[i].Arrival
			if s.in.Apps[i].Since > 0 {
				since = s.in.Apps[i].Since
			}
			if len(s.gained[i]) > 0 {
				since = s.in.Now
			}
			a = append(a, since)
		}
		if len(cand) == 0 {
			break
		}
		rounds++
		var ids []int
		for _, x := range WorstOff(r, a, s.opt.Knob.Bidders(len(cand))) {
			ids = append(ids, cand[x])
		}
		pf, grants, bs, _ := s.pfRound(ids, false)
		for x, i := range ids {
			if len(pf[x]) == 0 {
				dropped[i] = true
				continue
			}
			s.grant(bs[x], grants[x], pf[x])
		}
	}
	return rounds
}

func sortedCopy(x []int) []int {
	out := slices.Clone(x)
	slices.Sort(out)
	if out == nil {
		out = []int{}
	}
	return out
}

// withGPUs is a copy of a whose jobs also hold add[j].
func withGPUs(a *App, add [][]int) *App {
	c := *a
	c.Jobs = slices.Clone(a.Jobs)
	for j := range c.Jobs {
		if len(add[j]) > 0 {
			c.Jobs[j].Held = append(slices.Clone(c.Jobs[j].Held), add[j]...)
		}
	}
	return &c
}

func addJobs(cur [][]int, add [][]int) [][]int {
	if cur == nil {
		cur = make([][]int, len(add))
	}
	for j := range add {
		cur[j] = append(cur[j], add[j]...)
	}
	return cur
}

func cloneLists(x [][]int) [][]int {
	out := make([][]int, len(x))
	for i := range x {
		out[i] = slices.Clone(x[i])
	}
	return out
}
