package fairness

import (
	"cmp"
	"fmt"
	"math"
	"slices"
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
)

func (l Leftover) String() string {
	switch l {
	case NonbiddersFirst:
		return "nonbidders-first"
	case BiddersOnly:
		return "bidders-only"
	case NoLeftover:
		return "none"
	}
	return fmt.Sprintf("Leftover(%d)", int(l))
}

// ParseLeftover accepts the String forms.
func ParseLeftover(s string) (Leftover, error) {
	for _, l := range []Leftover{NonbiddersFirst, BiddersOnly, NoLeftover} {
		if s == l.String() {
			return l, nil
		}
	}
	return 0, fmt.Errorf("unknown leftover rule %q (want nonbidders-first, bidders-only or none)", s)
}

// Options are the auction's knobs.
type Options struct {
	Knob     Knob
	Payments bool // withhold 1 − c_i of each winner's bundle
	Leftover Leftover
	Metric   Metric // nil: Themis
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

// DefaultOptions are the paper's: f = 0.8, payments on, leftovers to
// non-bidders first, the Themis metric, placement- and variability-aware
// bids.
func DefaultOptions() Options {
	return Options{Knob: DefaultKnob, Payments: true, Leftover: NonbiddersFirst, Metric: Themis{}}
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
	Gained []int   // every new GPU it ends with (kept plus leftovers)
	Final  []int   // held plus gained, ascending
	// Jobs is each job's new GPUs (the water-fill split of Gained).
	Jobs [][]int
}

// Result is one auction's outcome.
type Result struct {
	N, K     int   // apps wanting GPUs, bidders
	Bidders  []int // app indices, worst-off first
	Apps     []AppResult
	Leftover []int // offered GPUs nobody got
}

// Run holds one auction. It checks that no GPU is held twice or both held
// and offered, and never returns a GPU twice.
func Run(in Input, opt Options) (*Result, error) {
	t := in.Topo
	if t == nil {
		return nil, fmt.Errorf("auction: no topology")
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
	ctx := Context{Now: in.Now, ClusterGPUs: t.NumGPUs(), ActiveApps: in.ActiveApps}
	if ctx.ActiveApps == 0 {
		ctx.ActiveApps = len(in.Apps)
	}
	sens := func(a *App) Sensitivity {
		if opt.PlacementBlind {
			return Insensitive
		}
		return a.Sens
	}
	speeds := !opt.VariabilityBlind && t.hasSpeeds

	pl := newPool(t, in.Offer)
	res := &Result{Apps: make([]AppResult, len(in.Apps))}
	bs := make([]*bidder, len(in.Apps))
	rho := make([]float64, len(in.Apps))
	arrival := make([]float64, len(in.Apps))
	var wanting []int
	for i, a := range in.Apps {
		b := newBidder(a, i, ctx, opt.Metric, 0, sens(a), speeds, held[i])
		bs[i] = b
		rho[i] = b.rho(b.currentRate(t))
		arrival[i] = a.Arrival
		if a.Since > 0 {
			arrival[i] = a.Since
		}
		res.Apps[i].Rho = rho[i]
		if wantsMore(a, pl.size) {
			res.Apps[i].Wants = true
			wanting = append(wanting, i)
		}
	}
	res.N = len(wanting)
	res.K = opt.Knob.Bidders(res.N)
	wr := make([]float64, len(wanting))
	wa := make([]float64, len(wanting))
	for x, i := range wanting {
		wr[x], wa[x] = rho[i], arrival[i]
	}
	for _, x := range WorstOff(wr, wa, res.K) {
		res.Bidders = append(res.Bidders, wanting[x])
		res.Apps[wanting[x]].Bidder = true
	}

	// Bids: one per useful size, each on the app's best bundle from the
	// whole offer; the arbiter picks sizes with the max product of 1/ρ.
	tables := make([][]option, len(res.Bidders))
	for x, i := range res.Bidders {
		bs[i].setLimit(pl.size)
		tables[x] = bidTable(bs[i], pl, cmp.Or(opt.MaxBids, DefaultMaxBids))
	}
	choice, without := proportionalFair(tables, pl.size)

	// Pack the chosen sizes onto disjoint GPUs: larger bundles first, then
	// worst-off first.
	order := make([]int, len(res.Bidders))
	for x := range order {
		order[x] = x
	}
	slices.SortStableFunc(order, func(x, y int) int {
		return cmp.Compare(tables[y][choice[y]].n, tables[x][choice[x]].n)
	})
	pf := make([][]int, len(res.Bidders))
	for _, x := range order {
		o := tables[x][choice[x]]
		if o.n == 0 {
			continue
		}
		bundle, _ := bs[res.Bidders[x]].best(pl, o.p)
		pf[x] = slices.Clone(bundle)
		pl.remove(pf[x])
	}

	// Hidden payments: keep ⌊c_i·|G*_i|⌋ GPUs, the best-placed ones.
	holding := make([]*App, len(in.Apps)) // apps with their gains so far
	copy(holding, in.Apps)
	gained := make([][]int, len(in.Apps))
	jobs := make([][][]int, len(in.Apps))
	for x, i := range res.Bidders {
		c := keepFraction(tables, choice, without[x], x)
		ar := &res.Apps[i]
		ar.Keep = c
		ar.PF = sortedCopy(pf[x])
		if len(pf[x]) == 0 {
			continue
		}
		b := bs[i]
		keepN := len(pf[x])
		if opt.Payments {
			keepN = int(math.Floor(c*float64(len(pf[x])) + 1e-9))
		}
		p := tables[x][choice[x]].p
		for p > 0 && b.cum[p] > keepN {
			p--
		}
		var kept []int
		switch {
		case p > 0 && b.cum[p] == len(pf[x]):
			kept = pf[x]
		case p > 0:
			sub := newPool(t, pf[x])
			kept, _ = b.best(sub, p)
		}
		ar.Kept = sortedCopy(kept)
		withheld := make([]int, 0, len(pf[x])-len(kept))
		for _, g := range pf[x] {
			if !slices.Contains(kept, g) {
				withheld = append(withheld, g)
			}
		}
		pl.add(withheld)
		if len(kept) > 0 {
			split := cloneLists(b.split(t, p, kept))
			holding[i] = withGPUs(in.Apps[i], split)
			gained[i] = append(gained[i], kept...)
			jobs[i] = addJobs(jobs[i], split)
		}
	}

	// Leftovers.
	give := func(i int) {
		if pl.size == 0 || !wantsMore(holding[i], pl.size) {
			return
		}
		var h []int
		if holding[i] == in.Apps[i] {
			h = held[i]
		}
		b := newBidder(holding[i], i, ctx, opt.Metric, pl.size, sens(in.Apps[i]), speeds, h)
		cur := b.utility(t, 0, nil)
		bestP, bestU := 0, cur
		var bestB []int
		for _, p := range bidSizes(b.cum, cmp.Or(opt.MaxBids, DefaultMaxBids)) {
			bundle, u := b.best(pl, p)
			if bundle != nil && u > bestU*(1+1e-12) {
				bestP, bestU, bestB = p, u, slices.Clone(bundle)
			}
		}
		if bestP == 0 {
			return
		}
		pl.remove(bestB)
		split := cloneLists(b.split(t, bestP, bestB))
		holding[i] = withGPUs(holding[i], split)
		gained[i] = append(gained[i], bestB...)
		jobs[i] = addJobs(jobs[i], split)
	}
	byRank := func(bidders bool) []int {
		var ids []int
		for _, i := range wanting {
			if res.Apps[i].Bidder == bidders {
				ids = append(ids, i)
			}
		}
		r := make([]float64, len(ids))
		a := make([]float64, len(ids))
		for x, i := range ids {
			r[x], a[x] = rho[i], arrival[i]
		}
		out := WorstOff(r, a, len(ids))
		for x := range out {
			out[x] = ids[out[x]]
		}
		return out
	}
	if opt.Leftover == NonbiddersFirst {
		for _, i := range byRank(false) {
			give(i)
		}
	}
	if opt.Leftover != NoLeftover {
		for _, i := range byRank(true) {
			give(i)
		}
	}
	res.Leftover = pl.gpus()
	for i := range in.Apps {
		ar := &res.Apps[i]
		ar.Gained = sortedCopy(gained[i])
		ar.Final = append(held[i], ar.Gained...)
		slices.Sort(ar.Final)
		if jobs[i] == nil {
			jobs[i] = make([][]int, len(in.Apps[i].Jobs))
		}
		for j := range jobs[i] {
			slices.Sort(jobs[i][j])
		}
		ar.Jobs = jobs[i]
	}
	return res, nil
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
