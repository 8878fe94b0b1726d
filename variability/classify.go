package variability

import (
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/data"
	"github.com/palsched/pal/internal/quote"
)

// App is one profiled application in PAL's classification space (paper
// §III-A): DRAM utilisation and peak functional-unit utilisation, both on
// nsight compute's 0–10 scale.
type App struct {
	Name string
	DRAM float64
	FU   float64
}

// ExampleAppsFile is the embedded example table, with illustrative (not
// measured) values placing the paper's Table II applications.
const ExampleAppsFile = "classify/table2-apps.csv"

// ReadApps reads a CSV with columns app, dram_util, fu_util. Lines that
// start with '#' are comments.
func ReadApps(name string, r io.Reader) ([]App, error) {
	t, err := openCSV(name, r, []string{"app", "dram_util", "fu_util"})
	if err != nil {
		return nil, err
	}
	cols, err := t.Cols("app", "dram_util", "fu_util")
	if err != nil {
		return nil, err
	}
	nameCol, dramCol, fuCol := cols[0], cols[1], cols[2]
	var apps []App
	seen := map[string]int{}
	for t.Next() {
		a := App{Name: t.Text(nameCol)}
		if a.Name == "" {
			return nil, t.Errorf(nameCol, "empty")
		}
		if prev, dup := seen[a.Name]; dup {
			return nil, t.Errorf(nameCol, "%s repeats line %d", quote.Value(a.Name), prev)
		}
		seen[a.Name] = t.FieldLine(nameCol)
		for _, f := range []struct {
			col int
			dst *float64
		}{{dramCol, &a.DRAM}, {fuCol, &a.FU}} {
			v, err := t.Float(f.col)
			if err != nil {
				return nil, err
			}
			if v < 0 || v > 10 {
				return nil, t.Errorf(f.col, "%v is outside nsight compute's 0-10 scale", v)
			}
			*f.dst = v
		}
		apps = append(apps, a)
	}
	if err := t.Err(); err != nil {
		return nil, err
	}
	if len(apps) == 0 {
		return nil, &InputError{File: name, Msg: "no data rows"}
	}
	return apps, nil
}

// ExampleApps reads the embedded example table.
func ExampleApps() ([]App, error) {
	f, err := data.Classify.Open(ExampleAppsFile)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return ReadApps("table2-apps.csv", f)
}

// ClassifierOptions tunes NewClassifier.
type ClassifierOptions struct {
	// K fixes the number of classes (1..4); 0 picks it by silhouette
	// over 2..min(4, apps-1), as the paper sweeps K.
	K     int
	Seed  uint64
	NInit int // k-means++ restarts, 0 means 10
}

// Classifier groups applications into variability classes. A new
// application is profiled once and put in the class of the nearest
// centroid, so only one representative per class needs a variability
// profile across the whole cluster.
type Classifier struct {
	K int
	// Centroids[c] is class c's centre as {DRAM, FU}; classes run from the
	// most compute-bound (A) to the most memory-bound.
	Centroids [][2]float64
	// Silhouette of the clustering; NaN when undefined (K < 2 or K ≥ apps).
	Silhouette float64
	Apps       []App
	// Class is each app's class.
	Class []Class
}

// NewClassifier clusters apps in the 2-D utilisation space.
func NewClassifier(apps []App, opts ClassifierOptions) (*Classifier, error) {
	if len(apps) == 0 {
		return nil, errors.New("classifier: no applications")
	}
	pts := make([][2]float64, len(apps))
	for i, a := range apps {
		for _, v := range []float64{a.DRAM, a.FU} {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("classifier: app %s has value %v", quote.Value(a.Name), v)
			}
		}
		pts[i] = [2]float64{a.DRAM, a.FU}
	}
	if opts.K < 0 || opts.K > NumClasses {
		return nil, fmt.Errorf("classifier: K must be between 1 and %d, got %d", NumClasses, opts.K)
	}
	nInit := opts.NInit
	if nInit <= 0 {
		nInit = 10
	}
	nd := len(distinctPoints(pts))
	var cent [][2]float64
	var labels []int
	sil := math.NaN()
	if opts.K > 0 {
		cent, labels = kmeans2D(pts, min(opts.K, nd), nInit, opts.Seed)
		sil = silhouette2D(pts, labels)
	} else {
		hi := min(NumClasses, nd, len(pts)-1)
		if hi < 2 {
			cent, labels = kmeans2D(pts, min(nd, NumClasses), nInit, opts.Seed)
		}
		bestCmp := math.Inf(-1)
		for k := 2; k <= hi; k++ {
			c, l := kmeans2D(pts, k, nInit, opts.Seed)
			s := silhouette2D(pts, l)
			cmp := s
			if math.IsNaN(cmp) {
				cmp = math.Inf(-1)
			}
			if cent == nil || cmp > bestCmp {
				cent, labels, sil, bestCmp = c, l, s, cmp
			}
		}
	}
	// Order clusters by compute intensity: the angle of (DRAM, FU) from
	// the DRAM axis grows with FU/DRAM and stays defined at DRAM = 0.
	order := identity(len(cent))
	slices.SortStableFunc(order, func(a, b int) int {
		ia := math.Atan2(cent[a][1], cent[a][0])
		ib := math.Atan2(cent[b][1], cent[b][0])
		switch {
		case ia > ib:
			return -1
		case ia < ib:
			return 1
		case cent[a][0] < cent[b][0]:
			return -1
		case cent[a][0] > cent[b][0]:
			return 1
		}
		return 0
	})
	rank := make([]int, len(order))
	c := &Classifier{K: len(cent), Silhouette: sil, Apps: slices.Clone(apps), Class: make([]Class, len(apps))}
	for r, j := range order {
		rank[j] = r
		c.Centroids = append(c.Centroids, cent[j])
	}
	for i, l := range labels {
		c.Class[i] = Class(rank[l])
	}
	return c, nil
}

// Classify puts a new application in the class of the nearest centroid
// (the lower class on an exact tie).
func (c *Classifier) Classify(dram, fu float64) Class {
	best, bd := 0, math.Inf(1)
	for j, ct := range c.Centroids {
		if d := dist2(ct, [2]float64{dram, fu}); d < bd {
			best, bd = j, d
		}
	}
	return Class(best)
}

func dist2(a, b [2]float64) float64 {
	dx, dy := a[0]-b[0], a[1]-b[1]
	return dx*dx + dy*dy
}

func distinctPoints(p [][2]float64) [][2]float64 {
	var out [][2]float64
	for _, q := range p {
		if !slices.Contains(out, q) {
			out = append(out, q)
		}
	}
	return out
}

// kmeans2D is k-means++ (greedy, as scikit-learn) plus Lloyd, best of
// nInit. The classifier sees tens of applications, so plain O(n·k) loops
// are all it needs. k must not exceed the number of distinct points.
func kmeans2D(pts [][2]float64, k, nInit int, seed uint64) ([][2]float64, []int) {
	rng := NewRand(seed)
	var best [][2]float64
	var bestL []int
	bestIn := math.Inf(1)
	for range nInit {
		c := seed2D(pts, k, rng)
		l := lloyd2D(pts, c)
		in := 0.0
		for i, p := range pts {
			in += dist2(p, c[l[i]])
		}
		if in < bestIn {
			best, bestL, bestIn = c, l, in
		}
	}
	return best, bestL
}

func nearest2D(p [2]float64, c [][2]float64) (int, float64) {
	j, d := 0, math.Inf(1)
	for i, q := range c {
		if dd := dist2(p, q); dd < d {
			j, d = i, dd
		}
	}
	return j, d
}

func seed2D(pts [][2]float64, k int, rng *rand.Rand) [][2]float64 {
	c := [][2]float64{pts[rng.IntN(len(pts))]}
	d := make([]float64, len(pts))
	trials := 2 + int(math.Log(float64(k)))
	for len(c) < k {
		pot := 0.0
		for i, p := range pts {
			_, d[i] = nearest2D(p, c)
			pot += d[i]
		}
		if pot <= 0 {
			break
		}
		bi, bp := -1, math.Inf(1)
		for range trials {
			r := rng.Float64() * pot
			i := 0
			for ; i < len(pts)-1; i++ {
				if r -= d[i]; r < 0 {
					break
				}
			}
			if d[i] == 0 {
				continue // rounding landed on a centre
			}
			np := 0.0
			for m, p := range pts {
				np += min(d[m], dist2(p, pts[i]))
			}
			if np < bp {
				bi, bp = i, np
			}
		}
		if bi < 0 {
			// Only rounding can get here: take the farthest point.
			for i := range d {
				if bi < 0 || d[i] > d[bi] {
					bi = i
				}
			}
		}
		c = append(c, pts[bi])
	}
	return c
}

func lloyd2D(pts [][2]float64, c [][2]float64) []int {
	l := make([]int, len(pts))
	for it := 0; it < 300; it++ {
		changed := it == 0
		for i, p := range pts {
			j, _ := nearest2D(p, c)
			if j != l[i] {
				changed = true
			}
			l[i] = j
		}
		if !changed {
			break
		}
		sum := make([][3]float64, len(c))
		for i, p := range pts {
			sum[l[i]][0] += p[0]
			sum[l[i]][1] += p[1]
			sum[l[i]][2]++
		}
		for j := range c {
			if sum[j][2] > 0 {
				c[j] = [2]float64{sum[j][0] / sum[j][2], sum[j][1] / sum[j][2]}
				continue
			}
			// Empty cluster: move it to the point farthest from its centre.
			far, fd := 0, -1.0
			for i, p := range pts {
				if dd := dist2(p, c[l[i]]); dd > fd {
					far, fd = i, dd
				}
			}
			c[j] = pts[far]
		}
	}
	return l
}

// silhouette2D is the mean silhouette (Euclidean), NaN unless
// 2 ≤ clusters ≤ n-1. Quadratic: the classifier's inputs are small.
func silhouette2D(pts [][2]float64, labels []int) float64 {
	n := len(pts)
	k := 0
	for _, l := range labels {
		k = max(k, l+1)
	}
	size := make([]int, k)
	for _, l := range labels {
		size[l]++
	}
	used := 0
	for _, s := range size {
		if s > 0 {
			used++
		}
	}
	if used < 2 || used > n-1 {
		return math.NaN()
	}
	total := 0.0
	sum := make([]float64, k)
	for i, p := range pts {
		clear(sum)
		for j, q := range pts {
			sum[labels[j]] += math.Sqrt(dist2(p, q))
		}
		own := labels[i]
		if size[own] < 2 {
			continue
		}
		a := sum[own] / float64(size[own]-1)
		b := math.Inf(1)
		for c := range k {
			if c != own && size[c] > 0 {
				b = min(b, sum[c]/float64(size[c]))
			}
		}
		if den := max(a, b); den > 0 {
			total += (b - a) / den
		}
	}
	return total / float64(n)
}
