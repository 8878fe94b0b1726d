package fairness

import (
	"cmp"
	"math/bits"
	"slices"

	"github.com/palsched/pal/variability"
)

// grant is one step of an app's water-fill: job gets n more GPUs.
type grant struct{ job, n int }

// waterFill is the app scheduler's order for handing out up to limit new
// GPUs (T9): the next GPU goes to the surviving job with the largest
// remaining time (remaining work ÷ GPUs, +Inf without GPUs; ties: more
// remaining work, then lower index), since the app finishes when its
// slowest job does. A gang takes all its GPUs in one grant and is skipped
// while it does not fit. Doomed and finished jobs get nothing.
// h is the heap's memory, reused.
func waterFill(a *App, limit int, h *fillHeap) []grant {
	limit = min(limit, a.Demand-a.heldCount())
	if limit <= 0 {
		return nil
	}
	h.jobs, h.items = a.Jobs, h.items[:0]
	for i := range a.Jobs {
		j := &a.Jobs[i]
		if j.Doomed || j.Unplaceable || j.Remaining <= 0 || len(j.Held) >= j.MaxGPUs || (j.Gang && len(j.Held) > 0) {
			continue
		}
		h.push(fillItem{job: i, count: len(j.Held)})
	}
	if len(h.items) == 0 {
		return nil
	}
	out := make([]grant, 0, len(h.items))
	left := limit
	for left > 0 && len(h.items) > 0 {
		it := h.pop()
		j := &a.Jobs[it.job]
		n := 1
		if j.Gang {
			n = j.MaxGPUs
		} else if it.count == 0 && j.MinGPUs > 1 {
			n = j.MinGPUs // an elastic job starts on its minimum
		}
		if n > left {
			continue // never fits: the budget only shrinks
		}
		out = append(out, grant{it.job, n})
		left -= n
		if it.count += n; it.count < j.MaxGPUs {
			h.push(it)
		}
	}
	return out
}

// wantsMore reports whether waterFill(a, limit) would grant anything.
func wantsMore(a *App, limit int) bool {
	limit = min(limit, a.Demand-a.heldCount())
	for i := range a.Jobs {
		j := &a.Jobs[i]
		if j.Doomed || j.Unplaceable || j.Remaining <= 0 || len(j.Held) >= j.MaxGPUs {
			continue
		}
		if j.Gang && (len(j.Held) > 0 || j.MaxGPUs > limit) {
			continue
		}
		if !j.Gang && len(j.Held) == 0 && j.MinGPUs > limit {
			continue
		}
		if limit >= 1 {
			return true
		}
	}
	return false
}

type fillItem struct{ job, count int }

// fillHeap orders jobs by remaining time (remaining work ÷ GPUs, +Inf
// without GPUs) descending, then remaining work descending, then index.
type fillHeap struct {
	jobs  []Job
	items []fillItem
}

func (h *fillHeap) less(x, y fillItem) bool {
	rx, ry := h.jobs[x.job].Remaining, h.jobs[y.job].Remaining
	tx, ty := inf, inf
	if x.count > 0 {
		tx = rx / float64(x.count)
	}
	if y.count > 0 {
		ty = ry / float64(y.count)
	}
	if tx != ty {
		return tx > ty
	}
	if rx != ry {
		return rx > ry
	}
	return x.job < y.job
}

func (h *fillHeap) push(it fillItem) {
	h.items = append(h.items, it)
	i := len(h.items) - 1
	for i > 0 {
		p := (i - 1) / 2
		if !h.less(h.items[i], h.items[p]) {
			break
		}
		h.items[i], h.items[p] = h.items[p], h.items[i]
		i = p
	}
}

func (h *fillHeap) pop() fillItem {
	top := h.items[0]
	last := len(h.items) - 1
	h.items[0] = h.items[last]
	h.items = h.items[:last]
	i := 0
	for {
		l, r, m := 2*i+1, 2*i+2, i
		if l < last && h.less(h.items[l], h.items[m]) {
			m = l
		}
		if r < last && h.less(h.items[r], h.items[m]) {
			m = r
		}
		if m == i {
			break
		}
		h.items[i], h.items[m] = h.items[m], h.items[i]
		i = m
	}
	return top
}

// WaterFill returns how many new GPUs each job of a gets out of n.
func WaterFill(a *App, n int) []int {
	out := make([]int, len(a.Jobs))
	for _, g := range waterFill(a, n, &fillHeap{}) {
		out[g.job] += g.n
	}
	return out
}

// pool is a set of GPUs on offer, indexed by machine, with each machine's
// GPUs in speed order per class (fastest first, then by id).
type pool struct {
	t       *Topology
	in      []bool
	cnt     []int // pooled GPUs per machine
	size    int
	classes int                             // 1 without speeds, else NumClasses
	lists   [variability.NumClasses][][]int // [class][machine] pooled GPUs in speed order
	sorted  []int                           // machines by count desc, id asc (valid while !dirty)
	dirty   bool
}

func newPool(t *Topology, gpus []int) *pool {
	p := &pool{t: t, in: make([]bool, t.NumGPUs()), cnt: make([]int, t.machines), classes: 1, dirty: true}
	if t.hasSpeeds {
		p.classes = variability.NumClasses
	}
	p.add(gpus)
	return p
}

// list is machine m's pooled GPUs in class c's speed order. A class's
// lists are built on first use: most auctions see few classes.
func (p *pool) list(c variability.Class, m int) []int {
	if p.classes == 1 {
		c = 0
	}
	if p.lists[c] == nil {
		// One backing array per class; machine x's list lives in its own
		// GPUs' span, so rebuilding never allocates.
		back := make([]int, len(p.t.machine))
		p.lists[c] = make([][]int, p.t.machines)
		for x := range p.lists[c] {
			o := p.t.offset[x]
			p.lists[c][x] = back[o : o : o+len(p.t.gpusOf[x])]
			if p.cnt[x] > 0 {
				p.rebuildClass(int(c), x)
			}
		}
	}
	return p.lists[c][m]
}

// remove takes gpus out of the pool.
func (p *pool) remove(gpus []int) { p.set(gpus, false) }

// add puts gpus into the pool.
func (p *pool) add(gpus []int) { p.set(gpus, true) }

func (p *pool) set(gpus []int, in bool) {
	var touched []int
	for _, g := range gpus {
		if p.in[g] == in {
			continue
		}
		p.in[g] = in
		m := p.t.machine[g]
		d := 1
		if !in {
			d = -1
		}
		p.cnt[m] += d
		p.size += d
		if !slices.Contains(touched, m) {
			touched = append(touched, m)
		}
	}
	for _, m := range touched {
		for c := range p.classes {
			if p.lists[c] != nil {
				p.rebuildClass(c, m)
			}
		}
	}
	p.dirty = true
}

// rebuildClass lists machine m's pooled GPUs in class c's speed order.
func (p *pool) rebuildClass(c, m int) {
	l := p.lists[c][m][:0]
	for _, g := range p.t.gpusOf[m] {
		if p.in[g] {
			l = append(l, g)
		}
	}
	if p.t.slot != nil {
		// The fullest slots first, so that a bundle's prefix of a
		// machine crosses as few slots as it can.
		fill := map[int]int{}
		for _, g := range l {
			fill[p.t.slot[g]]++
		}
		slices.SortStableFunc(l, func(a, b int) int {
			if c := cmp.Compare(fill[p.t.slot[b]], fill[p.t.slot[a]]); c != 0 {
				return c
			}
			return cmp.Compare(p.t.slot[a], p.t.slot[b])
		})
	}
	if p.t.hasSpeeds {
		sf := p.t.speed[c]
		slices.SortStableFunc(l, func(a, b int) int { return cmp.Compare(sf[a], sf[b]) })
	}
	p.lists[c][m] = l
}

func (p *pool) gpus() []int {
	out := []int{}
	for g, ok := range p.in {
		if ok {
			out = append(out, g)
		}
	}
	return out
}

// byCount is the machines with pooled GPUs, most pooled first, then by id.
func (p *pool) byCount() []int {
	if p.dirty {
		p.sorted = p.sorted[:0]
		for m, n := range p.cnt {
			if n > 0 {
				p.sorted = append(p.sorted, m)
			}
		}
		slices.SortFunc(p.sorted, func(a, b int) int {
			if c := cmp.Compare(p.cnt[b], p.cnt[a]); c != 0 {
				return c
			}
			return cmp.Compare(a, b)
		})
		p.dirty = false
	}
	return p.sorted
}

// bidder is an app as seen by one auction: its ρ terms, bid model and
// water-fill order.
type bidder struct {
	app     *App
	index   int
	ideal   float64
	elapsed float64
	rem     float64
	sens    Sensitivity
	speeds  bool
	grants  []grant
	cum     []int // cum[p]: new GPUs after p grants
	held    []int
	heldM   []int // machines where it holds GPUs, ascending
	// bestRate is the rate of the bundle best returned last.
	bestRate float64
	// base[i] is job i's rate on what it holds (rate asks for it for
	// every job a bundle does not reach; filled on first use).
	base []float64

	// Scratch, shared by the bidders of one auction (see scratch).
	*scratch
}

// scratch is the working memory of split and best. The bidders of an
// auction share one: a split's or a best's answer is read (or copied)
// before any bidder splits or picks again, and a round builds a bid table
// per bidder per size, so per-bidder buffers would be most of what an
// auction allocates.
type scratch struct {
	outBuf                    [][]int
	needBuf, spanBuf, flatBuf []int
	orderBuf, countBuf        []int
	// splitFlat's job order (orderBuf, with needBuf) is for the first
	// ordP grants of ordOf; seen[j] == ordEpoch marks the jobs in it. A
	// bid table asks for growing sizes, so the order grows grant by grant
	// instead of being sorted again for every bid.
	fill           fillHeap // setLimit's water-fill
	ordOf          *bidder
	ordP, ordEpoch int
	seenBuf        []int
	groupBuf       []run
	// best's: the bundle it returns lives in bundleBuf or in the pool's
	// lists
	bundleBuf, totBuf, inBuf, firstBuf []int
}

// newBidder prepares a's view of an auction; held is a.Held() when the
// caller has it (nil: computed here), scr the auction's scratch (nil: its
// own).
func newBidder(a *App, index int, c Context, m Metric, limit int, sens Sensitivity, speeds bool, held []int, scr *scratch) *bidder {
	b := &bidder{app: a, index: index, ideal: m.Ideal(a, c), elapsed: max(c.Now-a.Arrival, 0), rem: a.Remaining(), sens: sens, speeds: speeds, scratch: scr}
	if scr == nil {
		b.scratch = &scratch{}
	}
	b.setLimit(limit)
	if held == nil {
		held = a.Held()
	}
	b.held = held
	return b
}

func (b *bidder) setLimit(limit int) {
	if limit <= 0 {
		b.grants, b.cum = nil, []int{0}
		return
	}
	b.grants = waterFill(b.app, limit, &b.fill)
	b.cum = make([]int, len(b.grants)+1)
	for i, g := range b.grants {
		b.cum[i+1] = b.cum[i] + g.n
	}
}

func (b *bidder) heldMachines(t *Topology) []int {
	if b.heldM == nil {
		seen := map[int]bool{}
		for _, g := range b.held {
			seen[t.machine[g]] = true
		}
		b.heldM = make([]int, 0, len(seen))
		for m := range seen {
			b.heldM = append(b.heldM, m)
		}
		slices.Sort(b.heldM)
	}
	return b.heldM
}

// utilityAt is 1/ρ at a total rate.
func (b *bidder) utilityAt(rate float64) float64 {
	if b.rem <= 0 {
		return inf
	}
	if rate <= 0 {
		return 0
	}
	return b.ideal / (b.elapsed + b.rem/rate)
}

// rho is ρ at a total rate.
func (b *bidder) rho(rate float64) float64 {
	u := b.utilityAt(rate)
	if u == 0 {
		return inf
	}
	return 1 / u
}

// split places bundle (new GPUs, p grants' worth) onto the app's jobs:
// jobs taking the most GPUs choose first; a job grows on a machine where it
// already runs if it fits there, else on the machine that fits it most
// tightly, else across the machines with the most GPUs. It returns each
// job's new GPUs, in the bidder's scratch: valid until its next split.
func (b *bidder) split(t *Topology, p int, bundle []int) [][]int {
	jobs := b.app.Jobs
	if cap(b.outBuf) < len(jobs) {
		b.outBuf = make([][]int, len(jobs))
	}
	out := b.outBuf[:len(jobs)]
	clear(out)
	switch {
	case p == 0:
	case len(jobs) == 1:
		out[0] = bundle
	default:
		flat, span := b.splitFlat(t, p, bundle)
		for i := range out {
			if a, e := span[2*i], span[2*i+1]; e > a {
				out[i] = flat[a:e:e]
			}
		}
	}
	return out
}

// splitFlat is split for an app of several jobs and p > 0, without
// building the lists: job i's new GPUs are flat[span[2i]:span[2i+1]].
// The rate of every bid asks for a split, so it writes no pointer.
func (b *bidder) splitFlat(t *Topology, p int, bundle []int) (flat, span []int) {
	jobs := b.app.Jobs
	if cap(b.needBuf) < len(jobs) {
		b.needBuf = make([]int, len(jobs))
		b.spanBuf = make([]int, 2*len(jobs))
		b.seenBuf = make([]int, len(jobs))
		b.ordOf = nil
	}
	span = b.spanBuf[:2*len(jobs)]
	clear(span)
	// The jobs the first p grants reach, by need descending, then index
	// (a total order, so there is one answer). Only their entries of need
	// are read, so only theirs are reset.
	need := b.needBuf[:len(jobs)]
	order := b.orderBuf
	if b.ordOf != b || p < b.ordP {
		b.ordOf, b.ordP = b, 0
		b.ordEpoch++
		order = order[:0]
	}
	seen := b.seenBuf[:len(jobs)]
	for _, g := range b.grants[b.ordP:p] {
		x := len(order)
		if seen[g.job] != b.ordEpoch {
			seen[g.job] = b.ordEpoch
			need[g.job] = 0
			order = append(order, g.job)
		} else {
			x = slices.Index(order, g.job)
		}
		need[g.job] += g.n
		// Its need only grew: it moves towards the front.
		for ; x > 0; x-- {
			y := order[x-1]
			if need[y] > need[g.job] || need[y] == need[g.job] && y < g.job {
				break
			}
			order[x] = y
		}
		order[x] = g.job
	}
	b.ordP = p
	b.orderBuf = order
	// The bundle's GPUs in runs of one machine (best-packed bundles are
	// machine-contiguous). Jobs take prefixes of runs; every job's GPUs
	// are copied into one scratch array, in the order it takes them, so
	// a split allocates nothing once the scratch has grown (a bid table
	// splits once per size, every bidder, every round).
	groups := b.groupBuf[:0]
	for i, g := range bundle {
		m := t.machine[g]
		if len(groups) > 0 && groups[len(groups)-1].m == m {
			groups[len(groups)-1].hi = i + 1
			continue
		}
		groups = append(groups, run{m: m, lo: i, hi: i + 1})
	}
	b.groupBuf = groups
	flat = b.flatBuf[:0]
	if cap(flat) < len(bundle) {
		flat = make([]int, 0, len(bundle))
	}
	// byLen[l] has bit x set when run x has l GPUs left, when there are
	// at most 64 runs of at most 64 GPUs (the usual case): the tightest
	// run that fits n is then the lowest bit of the first non-empty
	// byLen[l], l >= n, and the largest the lowest bit of the last one,
	// as the scans over the runs below find them.
	var byLen [65]uint64
	top := 0
	fast := len(groups) <= maxFastRuns
	for x := range groups {
		l := groups[x].hi - groups[x].lo
		if l > 64 {
			fast = false
			break
		}
		byLen[l] |= 1 << x
		top = max(top, l)
	}
	use := func(x, k int) {
		if fast {
			l := groups[x].hi - groups[x].lo
			byLen[l] &^= 1 << x
			byLen[l-k] |= 1 << x
		}
		flat = append(flat, bundle[groups[x].lo:groups[x].lo+k]...)
		groups[x].lo += k
	}
	for _, i := range order {
		n := need[i]
		at := len(flat)
		fit := -1
		for _, g := range jobs[i].Held {
			for x := range groups {
				if groups[x].m == t.machine[g] && groups[x].hi-groups[x].lo >= n {
					fit = x
					break
				}
			}
			if fit >= 0 {
				break
			}
		}
		switch {
		case fit >= 0:
		case fast:
			for l := n; l <= top; l++ {
				if m := byLen[l]; m != 0 {
					fit = bits.TrailingZeros64(m)
					break
				}
			}
		default:
			for x := range groups {
				if l := groups[x].hi - groups[x].lo; l >= n && (fit < 0 || l < groups[fit].hi-groups[fit].lo) {
					fit = x
				}
			}
		}
		if fit >= 0 {
			use(fit, n)
		} else {
			for n > 0 {
				big := -1
				if fast {
					for l := top; l > 0; l-- {
						if m := byLen[l]; m != 0 {
							big = bits.TrailingZeros64(m)
							break
						}
					}
				} else {
					for x := range groups {
						if l := groups[x].hi - groups[x].lo; l > 0 && (big < 0 || l > groups[big].hi-groups[big].lo) {
							big = x
						}
					}
				}
				k := min(n, groups[big].hi-groups[big].lo)
				use(big, k)
				n -= k
			}
		}
		span[2*i], span[2*i+1] = at, len(flat)
	}
	b.flatBuf = flat
	return flat, span
}

// maxFastRuns is the most runs splitFlat indexes by length (a word's
// bits); tests set it to 0 to compare with the plain scans.
var maxFastRuns = 64

// run is the stretch bundle[lo:hi] of a bundle on one machine.
type run struct{ m, lo, hi int }

// rate is the app's total rate with p grants' worth of new GPUs in bundle.
func (b *bidder) rate(t *Topology, p int, bundle []int) float64 {
	jobs := b.app.Jobs
	if len(jobs) == 1 {
		if jobs[0].Doomed {
			return 0
		}
		return t.jobRate2(jobs[0].Held, bundle, b.sens, b.app.Class, b.speeds)
	}
	if b.base == nil {
		b.base = make([]float64, len(jobs))
		for i := range jobs {
			b.base[i] = t.jobRate2(jobs[i].Held, nil, b.sens, b.app.Class, b.speeds)
		}
	}
	var flat, span []int
	if p > 0 {
		flat, span = b.splitFlat(t, p, bundle)
	}
	r := 0.0
	for i := range jobs {
		switch {
		case jobs[i].Doomed:
		case span != nil && span[2*i+1] > span[2*i]:
			r += t.jobRate2(jobs[i].Held, flat[span[2*i]:span[2*i+1]], b.sens, b.app.Class, b.speeds)
		default:
			r += b.base[i]
		}
	}
	return r
}

// currentRate is the rate on held GPUs plus those whose lease just
// expired: what the app has been getting, which ranks it.
func (b *bidder) currentRate(t *Topology) float64 {
	r := 0.0
	for i := range b.app.Jobs {
		j := &b.app.Jobs[i]
		if !j.Doomed {
			r += t.jobRate2(j.Held, j.Prev, b.sens, b.app.Class, b.speeds)
		}
	}
	return r
}

func (b *bidder) utility(t *Topology, p int, bundle []int) float64 {
	return b.utilityAt(b.rate(t, p, bundle))
}

// best is the bidder's best bundle of cum[p] GPUs from the pool and its
// utility. Candidates, in tie-break order: growing on a machine it already
// uses; the single machine with the fastest such GPUs (without speeds:
// the tightest fit), lowest id on ties; and, when no machine has room,
// whole machines from one rack (the tightest rack that fits, preferring
// machines it already uses, then the fullest), else from the whole pool.
// It returns nil when the pool is too small. The bundle is the bidder's
// scratch or a view of the pool's lists: a caller keeping it copies it.
func (b *bidder) best(p *pool, p_ int) ([]int, float64) {
	n := b.cum[p_]
	if n > p.size || n == 0 {
		if n == 0 {
			return nil, b.utility(p.t, 0, nil)
		}
		return nil, -1
	}
	t := p.t
	c := b.app.Class
	var bestB []int
	bestU := -1.0
	try := func(bundle []int) {
		r := b.rate(t, p_, bundle)
		if u := b.utilityAt(r); u > bestU*(1+1e-12) || bestB == nil {
			bestB, bestU, b.bestRate = bundle, u, r
		}
	}
	for _, m := range b.heldMachines(t) {
		if p.cnt[m] >= n {
			try(p.list(c, m)[:n])
		}
	}
	fit := -1
	var fitScore float64
	for m, k := range p.cnt {
		if k < n {
			continue
		}
		s := 0.0
		if b.speeds && t.hasSpeeds {
			s = t.score(c, p.list(c, m)[n-1])
		}
		if fit < 0 || s < fitScore || (s == fitScore && k < p.cnt[fit]) {
			fit, fitScore = m, s
		}
	}
	if fit >= 0 {
		try(p.list(c, fit)[:n])
		return bestB, bestU
	}
	ms := p.byCount()
	if t.racks > 1 {
		tot := resizeInts(&b.totBuf, t.racks)
		clear(tot)
		for _, m := range ms {
			tot[t.rack[m]] += p.cnt[m]
		}
		r := -1
		for _, hm := range b.heldMachines(t) {
			if tot[t.rack[hm]] >= n {
				r = t.rack[hm]
				break
			}
		}
		if r < 0 {
			for i, k := range tot {
				if k >= n && (r < 0 || k < tot[r]) {
					r = i
				}
			}
		}
		if r >= 0 {
			in := b.inBuf[:0]
			for _, m := range ms {
				if t.rack[m] == r {
					in = append(in, m)
				}
			}
			b.inBuf = in
			ms = in
		}
	}
	ms = b.heldFirst(t, ms)
	bundle := b.bundleBuf[:0]
	for _, m := range ms {
		l := p.list(c, m)
		bundle = append(bundle, l[:min(len(l), n-len(bundle))]...)
		if len(bundle) == n {
			break
		}
	}
	b.bundleBuf = bundle
	try(bundle)
	return bestB, bestU
}

// heldFirst moves machines the bidder already uses to the front of ms.
func (b *bidder) heldFirst(t *Topology, ms []int) []int {
	hm := b.heldMachines(t)
	if len(hm) == 0 {
		return ms
	}
	out := b.firstBuf[:0]
	for _, m := range ms {
		if _, ok := slices.BinarySearch(hm, m); ok {
			out = append(out, m)
		}
	}
	for _, m := range ms {
		if _, ok := slices.BinarySearch(hm, m); !ok {
			out = append(out, m)
		}
	}
	b.firstBuf = out
	return out
}

// resizeInts is *s resized to n, grown when too short.
func resizeInts(s *[]int, n int) []int {
	if cap(*s) < n {
		*s = make([]int, n)
	}
	*s = (*s)[:n]
	return *s
}
