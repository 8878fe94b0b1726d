package variability

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// KStrategy chooses how many PM-score bins a class gets.
type KStrategy int

const (
	// KArtifact reproduces the PAL artifact: K = 2 + number of >3σ
	// outliers (its silhouette sweep returns after the first K because of
	// a misplaced return), one K-Means over all values, and scores
	// normalised by the median centroid. It is the default because the
	// published simulation numbers come from it.
	KArtifact KStrategy = iota
	// KPaper follows the paper's §III-B: silhouette sweep over K = 2..11
	// on the non-outliers, a separate sweep on the outliers, outliers
	// keeping their own normalised value as score, and normalisation by
	// the median GPU.
	KPaper
)

func (s KStrategy) String() string {
	switch s {
	case KArtifact:
		return "artifact"
	case KPaper:
		return "paper"
	}
	return fmt.Sprintf("KStrategy(%d)", int(s))
}

// ParseKStrategy accepts "artifact" and "paper".
func ParseKStrategy(s string) (KStrategy, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "artifact", "code", "":
		return KArtifact, nil
	case "paper", "silhouette":
		return KPaper, nil
	}
	return 0, fmt.Errorf("unknown k strategy %s (want artifact or paper)", quote.Value(s))
}

// BinOptions configures Bin. The zero value is the artifact's behaviour.
type BinOptions struct {
	Strategy KStrategy
	// Seed drives k-means++; the same seed gives the same bins.
	Seed uint64
	// NInit is the number of k-means++ restarts (0 means 10, the
	// scikit-learn default of the artifact's era).
	NInit int
	// Engine fits the clusters; Lloyd by default, as the artifact.
	Engine Engine
	// BaseK is the artifact strategy's cluster count besides outliers
	// (0 means 2, what the artifact effectively uses).
	BaseK int
	// MaxK is the largest K of the paper strategy's sweep (0 means 11).
	MaxK int
}

// Binning is one class's PM-score bins over a cluster's GPUs.
type Binning struct {
	Strategy KStrategy
	// K is the number of bins actually produced (after lowering K to the
	// number of distinct values).
	K int
	// Centroids are the bins' scores, normalised (divided by Norm), in
	// ascending order; bin b is Centroids[b].
	Centroids []float64
	// RawCentroids are the same in the input's units.
	RawCentroids []float64
	// Counts is the number of GPUs in each bin.
	Counts []int
	// OutlierBin marks bins whose GPUs are all >3σ outliers.
	OutlierBin []bool
	// Bin is each GPU's bin.
	Bin []int
	// SF is each GPU's binned score: its bin's centroid, except for paper
	// outliers which keep their own normalised value.
	SF []float64
	// Outliers are the GPUs above Threshold, ascending.
	Outliers []int
	// Threshold is mean + 3·sample std of the input.
	Threshold float64
	// Norm is the divisor that makes scores relative: the median of the
	// centroids (artifact) or of the GPUs' values (paper). It rescales all
	// scores uniformly, so it never changes an ordering.
	Norm float64
	// Silhouette is the silhouette score of the non-outliers' clustering
	// when the strategy computed one, NaN otherwise; OutlierSilhouette the
	// same for the outliers' clustering.
	Silhouette, OutlierSilhouette float64
}

// HasSilhouette reports whether Silhouette was computed.
func (b *Binning) HasSilhouette() bool { return !math.IsNaN(b.Silhouette) }

// Outliers returns the indices of values greater than mean + 3·std (sample
// std, ddof=1), and that threshold. Only slow GPUs are outliers: a GPU
// that is unusually fast is no risk to place on. Fewer than two values
// have no spread and hence no outliers.
func Outliers(values []float64) ([]int, float64) {
	if len(values) < 2 {
		return nil, math.Inf(1)
	}
	// Scale by the largest magnitude so the sums cannot overflow.
	s := 0.0
	for _, v := range values {
		s = max(s, math.Abs(v))
	}
	if s == 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return nil, math.Inf(1)
	}
	mean := 0.0
	for _, v := range values {
		mean += v / s
	}
	mean /= float64(len(values))
	ss := 0.0
	for _, v := range values {
		d := v/s - mean
		ss += d * d
	}
	std := math.Sqrt(ss / float64(len(values)-1))
	thr := mean + 3*std
	var out []int
	for i, v := range values {
		if v/s > thr {
			out = append(out, i)
		}
	}
	return out, thr * s
}

// Bin groups the GPUs' raw values of one class into PM-score bins.
func Bin(values []float64, opts BinOptions) (*Binning, error) {
	if len(values) == 0 {
		return nil, errors.New("binning: no GPUs")
	}
	for i, v := range values {
		if !(v > 0) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("binning: GPU %d has value %v; PM values must be positive and finite", i, v)
		}
	}
	km := KMeansOptions{Seed: opts.Seed, NInit: opts.NInit, Engine: opts.Engine}
	out, thr := Outliers(values)
	var b *Binning
	var err error
	switch opts.Strategy {
	case KArtifact:
		b, err = binArtifact(values, out, opts, km)
	case KPaper:
		b, err = binPaper(values, out, opts, km)
	default:
		return nil, fmt.Errorf("binning: unknown strategy %v", opts.Strategy)
	}
	if err != nil {
		return nil, err
	}
	b.Strategy, b.Outliers, b.Threshold = opts.Strategy, out, thr
	b.K = len(b.Centroids)
	b.OutlierBin = make([]bool, b.K)
	isOut := make([]bool, len(values))
	for _, g := range out {
		isOut[g] = true
	}
	allOut := make([]bool, b.K)
	for j := range allOut {
		allOut[j] = b.Counts[j] > 0
	}
	for g, j := range b.Bin {
		allOut[j] = allOut[j] && isOut[g]
	}
	copy(b.OutlierBin, allOut)
	for g, s := range b.SF {
		if !(s > 0) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("binning: GPU %d gets score %v; values span too wide a range", g, s)
		}
	}
	return b, nil
}

func binArtifact(values []float64, out []int, opts BinOptions, km KMeansOptions) (*Binning, error) {
	base := opts.BaseK
	if base <= 0 {
		base = 2
	}
	f, err := KMeans1D(values, base+len(out), km)
	if err != nil {
		return nil, err
	}
	norm := sortedMedian(f.Centroids) // already ascending
	b := &Binning{
		Centroids:         make([]float64, len(f.Centroids)),
		RawCentroids:      f.Centroids,
		Counts:            f.Counts,
		Bin:               f.Labels,
		SF:                make([]float64, len(values)),
		Norm:              norm,
		Silhouette:        math.NaN(),
		OutlierSilhouette: math.NaN(),
	}
	for j, c := range f.Centroids {
		b.Centroids[j] = c / norm
	}
	for g, j := range f.Labels {
		b.SF[g] = b.Centroids[j]
	}
	return b, nil
}

// sweepK fits K = 2..maxK and keeps the K with the highest silhouette
// (the smallest such K on ties: fewer bins for the same separation). When
// no K in range has a defined silhouette (fewer than three values or one
// distinct value), every distinct value gets its own bin, up to maxK.
func sweepK(x []float64, maxK int, km KMeansOptions) (*KMeansFit, float64, error) {
	d := newDistinct(x)
	nd := len(d.v)
	hi := min(maxK, nd, len(x)-1)
	if hi < 2 {
		c, err := d.cluster(min(nd, maxK), km)
		if err != nil {
			return nil, 0, err
		}
		return d.fit(c), math.NaN(), nil
	}
	var best []float64
	bestS, bestCmp := math.NaN(), math.Inf(-1)
	for k := 2; k <= hi; k++ {
		c, err := d.cluster(k, km)
		if err != nil {
			return nil, 0, err
		}
		c = d.prune(c) // score the clusters that will be reported
		s := d.silhouette(d.bounds(c, nil))
		cmp := s
		if math.IsNaN(cmp) {
			cmp = math.Inf(-1) // undefined never beats a real score
		}
		if best == nil || cmp > bestCmp {
			best, bestS, bestCmp = c, s, cmp
		}
	}
	return d.fit(best), bestS, nil
}

func countDistinct(x []float64) int {
	s := slices.Clone(x)
	slices.Sort(s)
	return len(slices.Compact(s))
}

func binPaper(values []float64, out []int, opts BinOptions, km KMeansOptions) (*Binning, error) {
	maxK := opts.MaxK
	if maxK <= 0 {
		maxK = 11
	}
	isOut := make([]bool, len(values))
	for _, g := range out {
		isOut[g] = true
	}
	var restIdx, outIdx []int
	var rest, outv []float64
	for g, v := range values {
		if isOut[g] {
			outIdx, outv = append(outIdx, g), append(outv, v)
		} else {
			restIdx, rest = append(restIdx, g), append(rest, v)
		}
	}
	fr, sr, err := sweepK(rest, maxK, km)
	if err != nil {
		return nil, err
	}
	type bin struct {
		raw   float64
		count int
		gpus  []int
	}
	var bins []bin
	addBins := func(f *KMeansFit, idx []int) {
		base := len(bins)
		for j, c := range f.Centroids {
			bins = append(bins, bin{raw: c, count: f.Counts[j]})
		}
		for i, l := range f.Labels {
			bins[base+l].gpus = append(bins[base+l].gpus, idx[i])
		}
	}
	addBins(fr, restIdx)
	so := math.NaN()
	if len(outv) > 0 {
		fo, s, err := sweepK(outv, maxK, km)
		if err != nil {
			return nil, err
		}
		so = s
		addBins(fo, outIdx)
	}
	// Outlier centroids exceed every non-outlier value, so this sort only
	// guards the order; it is stable for equal centroids.
	slices.SortStableFunc(bins, func(a, b bin) int { return cmp.Compare(a.raw, b.raw) })
	norm := median(values)
	b := &Binning{
		Centroids:         make([]float64, len(bins)),
		RawCentroids:      make([]float64, len(bins)),
		Counts:            make([]int, len(bins)),
		Bin:               make([]int, len(values)),
		SF:                make([]float64, len(values)),
		Norm:              norm,
		Silhouette:        sr,
		OutlierSilhouette: so,
	}
	for j, bn := range bins {
		b.RawCentroids[j] = bn.raw
		b.Centroids[j] = bn.raw / norm
		b.Counts[j] = bn.count
		for _, g := range bn.gpus {
			b.Bin[g] = j
			if isOut[g] {
				b.SF[g] = values[g] / norm
			} else {
				b.SF[g] = b.Centroids[j]
			}
		}
	}
	return b, nil
}
