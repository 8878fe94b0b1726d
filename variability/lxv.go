package variability

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"
)

// LVEntry is one cell of PAL's L×V matrix: "use GPUs with score ≤ V,
// packed on one node (Across false) or spread (Across true)", with the
// combined slowdown estimate Product = V·L that orders the traversal.
type LVEntry struct {
	V       float64
	Across  bool
	Product float64
}

// String writes the entry as in the paper's traversal, e.g. "W0.913".
func (e LVEntry) String() string {
	k := "W"
	if e.Across {
		k = "A"
	}
	return k + strconv.FormatFloat(e.Product, 'f', 3, 64)
}

// LxV builds the traversal order of one class from its GPUs' binned
// scores: every distinct score v, in order of first appearance by GPU
// index, yields (v, within, v) and (v, across, v·L); the entries are then
// stably sorted by product. Stability is what makes a within entry precede
// the across entry of the same v when L = 1, as in the artifact (Python's
// sort is stable). Unlike the paper's printed example, the within entry of
// an outlier bin is kept: the artifact has it, and packing on slow GPUs
// can still beat spreading on them.
func LxV(sf []float64, L float64) []LVEntry {
	seen := map[float64]bool{}
	var out []LVEntry
	for _, v := range sf {
		if seen[v] {
			continue
		}
		seen[v] = true
		out = append(out, LVEntry{V: v, Product: v}, LVEntry{V: v, Across: true, Product: v * L})
	}
	slices.SortStableFunc(out, func(a, b LVEntry) int { return cmp.Compare(a.Product, b.Product) })
	return out
}

// FormatLxV writes a traversal as "W0.913 → W1.000 → A1.552 → …".
func FormatLxV(lv []LVEntry) string {
	parts := make([]string, len(lv))
	for i, e := range lv {
		parts[i] = e.String()
	}
	return strings.Join(parts, " → ")
}

// DefaultLocalityPenalty is the artifact's --locality-penalty default.
const DefaultLocalityPenalty = 1.7

// LocalityModel says how much slower a job runs when its GPUs span nodes.
// PAL uses it twice: per class, to order the L×V traversal, and per job,
// for the slowdown the simulator charges. The artifact uses one constant
// for both; the code the authors ran on Frontera (blox-pal main) has a
// per-class table for the traversal and a per-(model, GPU count) table for
// the runtime charge.
type LocalityModel struct {
	// Across is the penalty wherever no table applies.
	Across float64
	// PerClass, if set, overrides Across for the traversal of a class.
	PerClass map[Class]float64
	// PerJob, if set, gives the runtime penalty by lower-case model name
	// and GPU count.
	PerJob map[string]map[int]float64
	// JobFallback is the runtime penalty of a job missing from PerJob
	// (blox-pal main uses 1.0: an unprofiled job is assumed insensitive).
	JobFallback float64
}

// ConstantLocality is the artifact's model: one L for every class and job.
func ConstantLocality(l float64) LocalityModel { return LocalityModel{Across: l} }

// BPMainLocality is blox-pal main's model: per-class L for the traversal
// and the per-(model, GPU count) table for runtime, 1.0 for unknown jobs.
// across is used for classes outside the table (none of A–D).
func BPMainLocality(across float64) LocalityModel {
	return LocalityModel{
		Across:   across,
		PerClass: map[Class]float64{ClassA: 1.16, ClassB: 1.0, ClassC: 1.0, ClassD: 1.10},
		PerJob: map[string]map[int]float64{
			"pointnet": {6: 1.0, 8: 1.10, 12: 1.20, 16: 1.25},
			"dcgan":    {6: 1.0, 8: 1.0, 12: 1.0},
			"vgg19":    {1: 1.0},
			"resnet50": {4: 1.0, 16: 1.16},
		},
		JobFallback: 1.0,
	}
}

// ForClass is the across-node L used to build class c's traversal.
func (m LocalityModel) ForClass(c Class) float64 {
	if l, ok := m.PerClass[c]; ok {
		return l
	}
	return m.Across
}

// ForJob is the runtime penalty of a spread job of the given model and
// GPU count.
func (m LocalityModel) ForJob(model string, gpus int) float64 {
	if m.PerJob == nil {
		return m.Across
	}
	if l, ok := m.PerJob[strings.ToLower(model)][gpus]; ok {
		return l
	}
	return m.JobFallback
}

// Validate rejects penalties that would make a product meaningless.
func (m LocalityModel) Validate() error {
	bad := func(l float64) bool { return !(l > 0) || math.IsInf(l, 0) }
	if bad(m.Across) {
		return fmt.Errorf("locality penalty must be positive and finite, got %v", m.Across)
	}
	for c, l := range m.PerClass {
		if bad(l) {
			return fmt.Errorf("locality penalty of class %s must be positive and finite, got %v", c, l)
		}
	}
	for model, t := range m.PerJob {
		for n, l := range t {
			if bad(l) {
				return fmt.Errorf("locality penalty of %s on %d GPUs must be positive and finite, got %v", model, n, l)
			}
		}
	}
	if m.PerJob != nil && bad(m.JobFallback) {
		return fmt.Errorf("fallback locality penalty must be positive and finite, got %v", m.JobFallback)
	}
	return nil
}

// Describe says which model is in force, for logs and reports.
func (m LocalityModel) Describe() string {
	var b strings.Builder
	if len(m.PerClass) == 0 {
		fmt.Fprintf(&b, "traversal: constant L=%g", m.Across)
	} else {
		b.WriteString("traversal: per-class L {")
		for i, c := range slices.Sorted(maps.Keys(m.PerClass)) {
			if i > 0 {
				b.WriteString(" ")
			}
			fmt.Fprintf(&b, "%s:%g", c, m.PerClass[c])
		}
		fmt.Fprintf(&b, "}, other classes %g", m.Across)
	}
	if m.PerJob == nil {
		fmt.Fprintf(&b, "; runtime: constant L=%g", m.Across)
	} else {
		b.WriteString("; runtime: per-(model, GPUs) table {")
		for i, model := range slices.Sorted(maps.Keys(m.PerJob)) {
			if i > 0 {
				b.WriteString(" ")
			}
			b.WriteString(model)
			b.WriteString(":")
			t := m.PerJob[model]
			for j, n := range slices.Sorted(maps.Keys(t)) {
				if j > 0 {
					b.WriteString(",")
				}
				fmt.Fprintf(&b, "%d→%g", n, t[n])
			}
		}
		fmt.Fprintf(&b, "}, unknown → %g", m.JobFallback)
	}
	return b.String()
}

// NthSmallest returns the n-th smallest value (1-based); vals is
// reordered. An L×V within entry ranks a node by the n-th best score it
// can offer an n-GPU job (PAL's placer and hived-pm's placement in a VC).
func NthSmallest(vals []float64, n int) float64 {
	for i := 0; i < n; i++ {
		m := i
		for k := i + 1; k < len(vals); k++ {
			if vals[k] < vals[m] {
				m = k
			}
		}
		vals[i], vals[m] = vals[m], vals[i]
	}
	return vals[n-1]
}
