package variability

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"sync"

	"github.com/palsched/pal/internal/quote"
)

// NewRand is the generator this package's callers should hand to Assign
// and that binning uses internally: PCG, fully determined by one seed.
func NewRand(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^randSalt))
}

// randSalt is NewRand's second PCG word, from the seed.
const randSalt = 0x9e3779b97f4a7c15

// Engine selects how a 1-D K-Means is fitted.
type Engine int

const (
	// EngineLloyd is what the artifact uses (scikit-learn's KMeans):
	// k-means++ seeding and Lloyd iterations, best of NInit restarts. It
	// finds a local optimum, which on PM data is almost always the global
	// one.
	EngineLloyd Engine = iota
	// EngineExact finds the global optimum by dynamic programming over the
	// sorted values (the "Ckmeans" idea), for checking Lloyd or when a
	// guaranteed optimum matters more than time. It costs O(K·n·log n)
	// time and K·n memory, so large inputs are refused.
	EngineExact
)

func (e Engine) String() string {
	switch e {
	case EngineLloyd:
		return "lloyd"
	case EngineExact:
		return "exact"
	}
	return fmt.Sprintf("Engine(%d)", int(e))
}

// ParseEngine accepts "lloyd" (or "kmeans++") and "exact" (or "ckmeans").
func ParseEngine(s string) (Engine, error) {
	switch s {
	case "lloyd", "kmeans++", "sklearn", "":
		return EngineLloyd, nil
	case "exact", "ckmeans", "dp":
		return EngineExact, nil
	}
	return 0, fmt.Errorf("unknown k-means engine %s (want lloyd or exact)", quote.Value(s))
}

// KMeansOptions tunes KMeans1D. The zero value is scikit-learn's classic
// default (10 restarts, 300 iterations) with seed 0.
type KMeansOptions struct {
	Seed    uint64
	NInit   int // restarts, best inertia kept; 0 means 10
	MaxIter int // Lloyd iterations per restart; 0 means 300
	Engine  Engine
}

// KMeansFit is a 1-D clustering. Clusters are numbered in ascending
// centroid order, which makes results comparable between runs and seeds.
type KMeansFit struct {
	Centroids []float64 // ascending
	Labels    []int     // per input value
	Counts    []int     // per cluster
	Inertia   float64   // sum of squared distances to the own centroid
}

// exactLimit bounds K·(distinct values) for EngineExact's tables.
const exactLimit = 50_000_000

// KMeans1D clusters x into k groups. If x has fewer than k distinct values
// k is lowered to that number, since extra clusters could only be empty.
func KMeans1D(x []float64, k int, opts KMeansOptions) (*KMeansFit, error) {
	if len(x) == 0 {
		return nil, errors.New("k-means: no values")
	}
	if k < 1 {
		return nil, fmt.Errorf("k-means: k must be at least 1, got %d", k)
	}
	for i, v := range x {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("k-means: value %d is %v", i, v)
		}
	}
	d := newDistinct(x)
	centers, err := d.cluster(k, opts)
	if err != nil {
		return nil, err
	}
	return d.fit(centers), nil
}

// cluster fits k (lowered to the number of distinct values) scaled,
// ascending centres.
func (d *distinct) cluster(k int, opts KMeansOptions) ([]float64, error) {
	k = min(k, len(d.v))
	nInit := opts.NInit
	if nInit <= 0 {
		nInit = 10
	}
	maxIter := opts.MaxIter
	if maxIter <= 0 {
		maxIter = 300
	}
	switch {
	case k == 1:
		return []float64{d.mean(0, len(d.v))}, nil
	case opts.Engine == EngineExact:
		if float64(k)*float64(len(d.v)) > exactLimit {
			return nil, fmt.Errorf("k-means: exact engine limited to K·distinct values ≤ %d, got %d·%d; use the lloyd engine", exactLimit, k, len(d.v))
		}
		return d.exact(k), nil
	case opts.Engine == EngineLloyd:
		return d.bestOf(k, nInit, maxIter, opts.Seed), nil
	}
	return nil, fmt.Errorf("k-means: unknown engine %v", opts.Engine)
}

// silhouette is Silhouette1D for a clustering into the contiguous runs of
// sorted values given by bounds b. For a value in run j every value of run
// j+2 is farther than every value of run j+1, so the nearest other cluster
// is a neighbouring run, and summed distances to a run come from prefix
// sums: O(distinct values) in all.
func (d *distinct) silhouette(b []int) float64 {
	k := len(b) - 1
	n := d.cw[len(d.v)]
	if k < 2 || float64(k) > n-1 {
		return math.NaN()
	}
	// dist is Σ w·|v[i]-u| over values u in [lo,hi).
	dist := func(i, lo, hi int) float64 {
		v := d.v[i]
		m := min(max(i, lo), hi)
		below := v*(d.cw[m]-d.cw[lo]) - (d.cs[m] - d.cs[lo])
		above := (d.cs[hi] - d.cs[m]) - v*(d.cw[hi]-d.cw[m])
		return max(below, 0) + max(above, 0)
	}
	total := 0.0
	for j := range k {
		lo, hi := b[j], b[j+1]
		own := d.cw[hi] - d.cw[lo]
		if own < 2 {
			continue // a lone GPU scores 0
		}
		for i := lo; i < hi; i++ {
			a := dist(i, lo, hi) / (own - 1)
			bb := math.Inf(1)
			if j > 0 {
				bb = dist(i, b[j-1], lo) / (d.cw[lo] - d.cw[b[j-1]])
			}
			if j < k-1 {
				bb = min(bb, dist(i, hi, b[j+2])/(d.cw[b[j+2]]-d.cw[hi]))
			}
			if den := max(a, bb); den > 0 {
				total += d.w[i] * (bb - a) / den
			}
		}
	}
	return total / n
}

// bestOf runs nInit seeded Lloyd fits and keeps the lowest inertia (the
// earliest on ties). Each restart has its own generator, derived from the
// seed up front, so restarts can run in parallel without the result
// depending on scheduling; with one cluster per outlier K can reach the
// thousands, where restarts dominate the cost of binning.
func (d *distinct) bestOf(k, nInit, maxIter int, seed uint64) []float64 {
	master := NewRand(seed)
	seeds := make([]uint64, nInit)
	for i := range seeds {
		seeds[i] = master.Uint64()
	}
	workers := min(runtime.GOMAXPROCS(0), nInit)
	if k*len(d.v) < 1<<14 || workers < 2 {
		// One scratch serves every restart: a restart's seeding and
		// iterations otherwise allocate a dozen slices, and binning a
		// small table in a process that has just started pays for each
		// fresh page they land on more than for the arithmetic.
		sc := newKMScratch(len(d.v), k)
		var best []float64
		bestIn := 0.0
		for _, sd := range seeds {
			c, in := sc.run(d, k, maxIter, sd)
			if best == nil || in < bestIn {
				best, bestIn = append(best[:0], c...), in
			}
		}
		return best
	}
	fits := make([][]float64, nInit)
	inertia := make([]float64, nInit)
	var wg sync.WaitGroup
	next := make(chan int)
	for range workers {
		wg.Go(func() {
			sc := newKMScratch(len(d.v), k)
			for i := range next {
				c, in := sc.run(d, k, maxIter, seeds[i])
				fits[i], inertia[i] = slices.Clone(c), in
			}
		})
	}
	for i := range nInit {
		next <- i
	}
	close(next)
	wg.Wait()
	best := 0
	for i := range nInit {
		if inertia[i] < inertia[best] {
			best = i
		}
	}
	return fits[best]
}

// kmScratch is what one k-means++ seeding and its Lloyd iterations
// work in, kept across the restarts of one fit.
type kmScratch struct {
	src     *rand.PCG
	rng     *rand.Rand
	s       seeder
	centers []float64
	b, prev []int
}

func newKMScratch(m, k int) *kmScratch {
	src := rand.NewPCG(0, 0)
	return &kmScratch{src: src, rng: rand.New(src),
		s:       seeder{fw: newFenwick(m), cost: make([]float64, m), cidx: make([]int, 0, k), b: make([]int, 0, k+1)},
		centers: make([]float64, 0, k), b: make([]int, 0, k+1), prev: make([]int, 0, k+1)}
}

// run is one restart: k-means++ seeded from seed (the stream NewRand(seed)
// gives), then Lloyd; its centres (valid until the next run) and their
// inertia.
func (sc *kmScratch) run(d *distinct, k, maxIter int, seed uint64) ([]float64, float64) {
	sc.src.Seed(seed, seed^randSalt)
	clear(sc.s.fw)
	clear(sc.s.cost)
	sc.s.d, sc.s.cidx, sc.s.b = d, sc.s.cidx[:0], sc.s.b[:0]
	sc.centers = d.seed(&sc.s, k, sc.rng, sc.centers[:0])
	sc.centers = d.lloydIn(sc.centers, maxIter, &sc.b, &sc.prev)
	sc.b = d.bounds(sc.centers, sc.b)
	return sc.centers, d.inertiaIn(sc.centers, sc.b)
}

// distinct holds the sorted distinct values of the input, rescaled to
// [0,1], with their multiplicities and prefix sums. In one dimension every
// optimal or Lloyd-stable clustering is a run of consecutive sorted values,
// so cluster costs come from prefix sums in O(1) and cluster boundaries
// from binary search; the work depends on the number of distinct values
// and K, not on how many GPUs share a value.
type distinct struct {
	v, w        []float64 // scaled distinct values ascending, counts
	cw, cs, css []float64 // prefix sums of w, w·v, w·v², length len(v)+1
	of          []int     // input index -> index into v
	lo, hi      float64   // input range
	half        float64   // x = 2·(lo/2 + half·v) undoes the scaling
}

func newDistinct(x []float64) *distinct {
	sorted := slices.Clone(x)
	slices.Sort(sorted)
	uniq := slices.Compact(sorted)
	lo, hi := uniq[0], uniq[len(uniq)-1]
	// Halves keep max-min finite for any finite inputs.
	half := hi/2 - lo/2
	d := &distinct{of: make([]int, len(x)), lo: lo, hi: hi, half: half}
	// Raw values too close to tell apart after scaling share one entry,
	// so that the scaled values are strictly increasing.
	merged := make([]int, len(uniq))
	for i, u := range uniq {
		y := 0.0
		if half > 0 {
			y = (u/2 - lo/2) / half
		}
		if n := len(d.v); n == 0 || y > d.v[n-1] {
			d.v = append(d.v, y)
			d.w = append(d.w, 0)
		}
		merged[i] = len(d.v) - 1
	}
	for i, v := range x {
		j, _ := slices.BinarySearch(uniq, v)
		d.of[i] = merged[j]
		d.w[merged[j]]++
	}
	m := len(d.v)
	d.cw = make([]float64, m+1)
	d.cs = make([]float64, m+1)
	d.css = make([]float64, m+1)
	for i, v := range d.v {
		w := d.w[i]
		d.cw[i+1] = d.cw[i] + w
		d.cs[i+1] = d.cs[i] + w*v
		d.css[i+1] = d.css[i] + w*v*v
	}
	return d
}

// unscale maps back to input units, clamped to the input's range so that
// rounding near ±MaxFloat64 cannot produce an infinity.
func (d *distinct) unscale(y float64) float64 {
	return min(max(2*(d.lo/2+d.half*y), d.lo), d.hi)
}

// seg sums the distinct values with index in [lo,hi).
func (d *distinct) seg(lo, hi int) (w, s, ss float64) {
	return d.cw[hi] - d.cw[lo], d.cs[hi] - d.cs[lo], d.css[hi] - d.css[lo]
}

// cost is the squared distance of [lo,hi) to c.
func (d *distinct) cost(lo, hi int, c float64) float64 {
	if hi <= lo {
		return 0
	}
	w, s, ss := d.seg(lo, hi)
	return max(ss-2*c*s+c*c*w, 0)
}

// mean of the non-empty run [lo,hi), kept inside the run's range so that
// rounding cannot reorder the centres of neighbouring runs.
func (d *distinct) mean(lo, hi int) float64 {
	w, s, _ := d.seg(lo, hi)
	return min(max(s/w, d.v[lo]), d.v[hi-1])
}

// sse is the squared distance of [lo,hi) to its own mean.
func (d *distinct) sse(lo, hi int) float64 {
	if hi <= lo {
		return 0
	}
	w, s, ss := d.seg(lo, hi)
	return max(ss-s*s/w, 0)
}

// upper is the first distinct index whose value exceeds t: values equal to
// a midpoint go to the lower centre, consistently for all copies.
func (d *distinct) upper(t float64) int {
	return sort.Search(len(d.v), func(i int) bool { return d.v[i] > t })
}

// bounds gives the cells of sorted centres: cell j is [b[j], b[j+1]).
func (d *distinct) bounds(c []float64, b []int) []int {
	b = append(b[:0], 0)
	for j := 1; j < len(c); j++ {
		b = append(b, d.upper((c[j-1]+c[j])/2))
	}
	return append(b, len(d.v))
}

// seedPlusPlus is greedy k-means++ as scikit-learn does it: the first
// centre is a uniformly drawn point, every further one the best (lowest
// resulting potential) of 2+⌊ln k⌋ candidates drawn with probability
// proportional to their squared distance from the nearest centre. Weights
// make a value shared by many GPUs as likely as those GPUs together.
//
// The artifact strategy asks for one cluster per outlier, which on a
// large cluster means K in the hundreds or thousands, so the seeding is
// incremental: centres are always data values, each cell's cost sits in
// a Fenwick tree at its centre's index, and adding a centre touches only
// its two neighbours. A draw or a candidate's evaluation is O(log n).
func (d *distinct) seedPlusPlus(k int, rng *rand.Rand) []float64 {
	m := len(d.v)
	s := &seeder{fw: newFenwick(m), cost: make([]float64, m)}
	return d.seed(s, k, rng, nil)
}

// seed is seedPlusPlus in s (its tree and costs zero, its lists empty),
// appending the centres to centers.
func (d *distinct) seed(s *seeder, k int, rng *rand.Rand, centers []float64) []float64 {
	m := len(d.v)
	s.d = d
	first := d.pick(d.cw, rng.Float64()*d.cw[m])
	s.cidx = append(s.cidx, first)
	s.b = append(s.b, 0, m)
	s.set(first, d.cost(0, m, d.v[first]))
	trials := 2 + int(math.Log(float64(k)))
	for len(s.cidx) < k {
		pot := s.fw.total()
		best, bestCell, bestPot := -1, -1, math.Inf(1)
		for range trials {
			q, j := s.sample(rng.Float64() * pot)
			if q < 0 {
				continue
			}
			if p := s.potentialWith(q, j, pot); p < bestPot {
				best, bestCell, bestPot = q, j, p
			}
		}
		if best < 0 {
			break // every value is a centre already
		}
		s.insert(best, bestCell)
	}
	for _, q := range s.cidx {
		centers = append(centers, d.v[q])
	}
	return centers
}

// seeder is the state of one k-means++ seeding.
type seeder struct {
	d    *distinct
	cidx []int // distinct indices of the centres, ascending
	b    []int // cell j is distinct values [b[j], b[j+1])
	fw   fenwick
	cost []float64 // cell cost by centre index, mirrors fw
}

func (s *seeder) set(q int, c float64) {
	s.fw.add(q, c-s.cost[q])
	s.cost[q] = c
}

func (s *seeder) cellCost(j int) float64 {
	return s.d.cost(s.b[j], s.b[j+1], s.d.v[s.cidx[j]])
}

// upperIn is upper restricted to [lo,hi], where the caller knows the
// answer lies. Cells hold few values even when the input holds many, so
// short ranges are scanned.
func (d *distinct) upperIn(t float64, lo, hi int) int {
	if hi-lo > 16 {
		return lo + sort.Search(hi-lo, func(i int) bool { return d.v[lo+i] > t })
	}
	for lo < hi && d.v[lo] <= t {
		lo++
	}
	return lo
}

// slot is where a non-centre value q of cell j goes in the centre list,
// and the range holding the points that may move to it: the cell of its
// left neighbour centre (if any) and the cell of its right one.
func (s *seeder) slot(q, j int) (p, lo, hi int) {
	p = j
	if q > s.cidx[j] {
		p = j + 1
	}
	lo, hi = s.b[max(p-1, 0)], s.b[min(p+1, len(s.cidx))]
	return p, lo, hi
}

// splits gives the cells left neighbour, q and right neighbour would have
// in [lo,hi): [lo,m1), [m1,m2), [m2,hi).
func (s *seeder) splits(q, p, lo, hi int) (m1, m2 int) {
	d := s.d
	c := d.v[q]
	m1, m2 = lo, hi
	if p > 0 {
		m1 = d.upperIn((d.v[s.cidx[p-1]]+c)/2, lo, q)
	}
	if p < len(s.cidx) {
		m2 = d.upperIn((c+d.v[s.cidx[p]])/2, q, hi)
	}
	return m1, max(m2, m1)
}

// insert adds distinct value q, which lies in cell j, as a centre.
func (s *seeder) insert(q, j int) {
	p, lo, hi := s.slot(q, j)
	m1, m2 := s.splits(q, p, lo, hi)
	s.cidx = slices.Insert(s.cidx, p, q)
	s.b = slices.Insert(s.b, p+1, 0)
	s.b[p], s.b[p+1] = m1, m2
	for j := max(p-1, 0); j <= min(p+1, len(s.cidx)-1); j++ {
		s.set(s.cidx[j], s.cellCost(j))
	}
}

// sample is the distinct value at cumulative squared distance r and its
// cell, or -1 when rounding leaves nothing to draw.
func (s *seeder) sample(r float64) (int, int) {
	d := s.d
	q, r := s.fw.search(r)
	if q >= len(d.v) || s.cost[q] <= 0 {
		// r reached the total through rounding: take the costliest cell.
		q = -1
		for _, c := range s.cidx {
			if q < 0 || s.cost[c] > s.cost[q] {
				q = c
			}
		}
		if s.cost[q] <= 0 {
			return -1, -1
		}
		r = s.cost[q] / 2
	}
	j, _ := slices.BinarySearch(s.cidx, q)
	lo, hi, c := s.b[j], s.b[j+1], d.v[q]
	// Cells hold few distinct values, so a scan beats a search.
	i := lo
	for ; i < hi; i++ {
		e := d.v[i] - c
		if r -= d.w[i] * e * e; r < 0 {
			break
		}
	}
	if i >= hi || i == q {
		// Rounding: fall back to the farther end of the cell.
		i = lo
		if c-d.v[lo] < d.v[hi-1]-c {
			i = hi - 1
		}
		if i == q {
			return -1, -1
		}
	}
	return i, j
}

// potentialWith is the total potential after adding distinct value q of
// cell j as a centre. Only points between q's two neighbouring centres can
// change their nearest centre, and they lie in those two neighbours' cells.
func (s *seeder) potentialWith(q, j int, pot float64) float64 {
	d := s.d
	p, lo, hi := s.slot(q, j)
	m1, m2 := s.splits(q, p, lo, hi)
	old, nw := 0.0, d.cost(m1, m2, d.v[q])
	if p > 0 {
		old += s.cost[s.cidx[p-1]]
		nw += d.cost(lo, m1, d.v[s.cidx[p-1]])
	}
	if p < len(s.cidx) {
		old += s.cost[s.cidx[p]]
		nw += d.cost(m2, hi, d.v[s.cidx[p]])
	}
	return pot - old + nw
}

// pick is the first index i with prefix[i+1] > r.
func (d *distinct) pick(prefix []float64, r float64) int {
	i := sort.Search(len(d.v), func(i int) bool { return prefix[i+1] > r })
	return min(i, len(d.v)-1)
}

// fenwick is a binary indexed tree of float sums over positions 0..n-1.
type fenwick []float64

func newFenwick(n int) fenwick { return make(fenwick, n+1) }

func (f fenwick) add(i int, v float64) {
	for i++; i < len(f); i += i & -i {
		f[i] += v
	}
}

// prefix is the sum of positions [0, i).
func (f fenwick) prefix(i int) float64 {
	s := 0.0
	for ; i > 0; i -= i & -i {
		s += f[i]
	}
	return s
}

func (f fenwick) total() float64 { return max(f.prefix(len(f)-1), 0) }

// search is the first position whose inclusive prefix sum exceeds r
// (len when none does), and r less the sum of the positions before it.
func (f fenwick) search(r float64) (int, float64) {
	pos := 0
	step := 1
	for step*2 < len(f) {
		step *= 2
	}
	for ; step > 0; step /= 2 {
		if n := pos + step; n < len(f) && f[n] <= r {
			pos = n
			r -= f[n]
		}
	}
	return pos, r
}

// lloydIn iterates assignment and mean steps until the cells stop
// changing, in the scratch cells *bp and *prevp.
// In 1-D the assignment step is just the midpoints between sorted centres.
func (d *distinct) lloydIn(centers []float64, maxIter int, bp, prevp *[]int) []float64 {
	b, prev := (*bp)[:0], (*prevp)[:0]
	defer func() { *bp, *prevp = b, prev }()
	for i := range maxIter {
		b = d.bounds(centers, b)
		d.relocateEmpty(centers, b)
		b = d.bounds(centers, b)
		if i > 0 && slices.Equal(b, prev) {
			break
		}
		prev = append(prev[:0], b...)
		for j := range centers {
			if b[j] < b[j+1] {
				centers[j] = d.mean(b[j], b[j+1])
			}
		}
		// Means of ordered, disjoint runs are already ascending; sorting
		// only guards against rounding.
		slices.Sort(centers)
	}
	return centers
}

// relocateEmpty moves the centre of an empty cell to the value farthest
// from its own centre, as scikit-learn does, so that K clusters survive.
func (d *distinct) relocateEmpty(centers []float64, b []int) {
	for range len(centers) {
		empty := -1
		for j := range centers {
			if b[j] == b[j+1] {
				empty = j
				break
			}
		}
		if empty < 0 {
			return
		}
		far, at := 0.0, -1
		for j := range centers {
			for _, e := range []int{b[j], b[j+1] - 1} {
				if e >= b[j] && e < b[j+1] {
					if dd := math.Abs(d.v[e] - centers[j]); dd > far {
						far, at = dd, e
					}
				}
			}
		}
		if at < 0 {
			return
		}
		centers[empty] = d.v[at]
		slices.Sort(centers)
		d.bounds(centers, b)
	}
}

// inertiaIn is the inertia of centres whose cells are b, summed point by
// point: restarts are compared on it and prefix-sum differences would
// blur near-ties.
func (d *distinct) inertiaIn(centers []float64, b []int) float64 {
	s := 0.0
	for j, c := range centers {
		for i := b[j]; i < b[j+1]; i++ {
			e := d.v[i] - c
			s += d.w[i] * e * e
		}
	}
	return s
}

// exact is the optimal clustering into k runs by dynamic programming:
// cost[m][i] = min over j of cost[m-1][j] + sse(j,i). The best j never
// decreases as i grows (1-D squared error satisfies the quadrangle
// inequality), so each layer is filled by divide and conquer.
func (d *distinct) exact(k int) []float64 {
	n := len(d.v)
	prev := make([]float64, n+1)
	cur := make([]float64, n+1)
	for i := 1; i <= n; i++ {
		prev[i] = d.sse(0, i)
	}
	arg := make([][]int32, k) // arg[m][i]: start of the last run
	for m := 1; m < k; m++ {
		arg[m] = make([]int32, n+1)
		for i := range cur {
			cur[i] = math.Inf(1)
		}
		var solve func(iLo, iHi, jLo, jHi int)
		solve = func(iLo, iHi, jLo, jHi int) {
			if iLo > iHi {
				return
			}
			i := (iLo + iHi) / 2
			best, bj := math.Inf(1), jLo
			for j := jLo; j <= min(jHi, i-1); j++ {
				if v := prev[j] + d.sse(j, i); v < best {
					best, bj = v, j
				}
			}
			cur[i], arg[m][i] = best, int32(bj)
			solve(iLo, i-1, jLo, bj)
			solve(i+1, iHi, bj, jHi)
		}
		// With m+1 runs at least m+1 values are needed; the last run
		// starts at j >= m.
		solve(m+1, n, m, n-1)
		prev, cur = cur, prev
	}
	ends := make([]int, k+1)
	ends[k] = n
	for m := k - 1; m >= 1; m-- {
		ends[m] = int(arg[m][ends[m+1]])
	}
	centers := make([]float64, k)
	for j := range k {
		centers[j] = d.mean(ends[j], ends[j+1])
	}
	return centers
}

// prune drops centres whose cell is empty (a Lloyd run cut off by
// MaxIter, or a relocation that could not help): callers count bins by
// members, and an empty bin would only confuse the L×V order. Removing a
// centre only widens its neighbours' cells, so no new cell empties.
func (d *distinct) prune(centers []float64) []float64 {
	centers = slices.Compact(slices.Sorted(slices.Values(centers)))
	b := d.bounds(centers, nil)
	for j := len(centers) - 1; j >= 0; j-- {
		if b[j] == b[j+1] && len(centers) > 1 {
			centers = slices.Delete(centers, j, j+1)
			b = d.bounds(centers, b)
		}
	}
	return centers
}

// fit turns scaled centres into a result in input units.
func (d *distinct) fit(centers []float64) *KMeansFit {
	centers = d.prune(centers)
	b := d.bounds(centers, nil)
	label := make([]int, len(d.v))
	for j := range centers {
		for i := b[j]; i < b[j+1]; i++ {
			label[i] = j
		}
	}
	f := &KMeansFit{
		Centroids: make([]float64, len(centers)),
		Labels:    make([]int, len(d.of)),
		Counts:    make([]int, len(centers)),
	}
	for j, c := range centers {
		f.Centroids[j] = d.unscale(c)
	}
	for i, di := range d.of {
		l := label[di]
		f.Labels[i] = l
		f.Counts[l]++
	}
	// Inertia in input units; exact per point so small clusters are not
	// lost in rounding.
	// (2·half)² is applied last so that a range near MaxFloat64 overflows
	// to +Inf rather than 0·Inf = NaN.
	for j, c := range centers {
		for i := b[j]; i < b[j+1]; i++ {
			e := (d.v[i] - c) * d.half
			f.Inertia += 4 * d.w[i] * e * e
		}
	}
	return f
}
