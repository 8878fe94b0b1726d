package stale

import (
	"cmp"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/report"
)

// How fast learning closes the gap: each run's tracked jobs, in order of
// arrival, are cut into convergenceGroups groups of (nearly) equal size,
// and a group's mean JCT under a variant is divided by the oracle's for
// the same jobs. The first group arrives while the learner has seen
// nothing, so it runs as stale does; the later ones show how much of the
// gap the learner has closed by then. Groups of jobs rather than of
// hours, because the traces span hours to months.
const convergenceGroups = 10

// convergenceVariants are the variants the curve compares with the
// oracle, in plot order.
var convergenceVariants = []string{"stale", "stale+learning", "stale+learning+dcgm", "stale+gpu-learning"}

// kept reports whether a variant's runs keep per-job records (the curve
// reads them).
func kept(v string) bool { return v == "oracle" || slices.Contains(convergenceVariants, v) }

// Convergence is one family's curve: Ratio[v][k] is the geometric mean,
// over the family's runs (traces x draws), of group k's mean JCT under
// v over the oracle's.
type Convergence struct {
	Family string
	Runs   int
	Ratio  map[string][]float64
}

// groupMeans is the mean JCT of each arrival group of jobs, the groups
// cut from order (job ids by arrival).
func groupMeans(order []int, jct map[int]float64) []float64 {
	out := make([]float64, convergenceGroups)
	n := len(order)
	for k := range convergenceGroups {
		lo, hi := k*n/convergenceGroups, (k+1)*n/convergenceGroups
		var xs []float64
		for _, id := range order[lo:hi] {
			xs = append(xs, jct[id])
		}
		out[k] = metrics.Mean(xs)
	}
	return out
}

// convergence builds each family's curve from the runs' job records,
// keyed like rows (draw, family, trace) and then by variant.
func convergence(jobs map[string]map[string][]metrics.JobRecord, fams []string) ([]Convergence, error) {
	keys := make([]string, 0, len(jobs))
	for k := range jobs {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []Convergence
	for _, fam := range fams {
		logs := map[string][][]float64{} // variant -> runs -> group ratios
		runs := 0
		for _, k := range keys {
			if strings.Split(k, "\x00")[1] != fam {
				continue
			}
			byVar := jobs[k]
			var order []int
			arrival := map[int]float64{}
			for _, j := range byVar["oracle"] {
				if j.Tracked {
					order = append(order, j.ID)
					arrival[j.ID] = j.Arrival
				}
			}
			if len(order) < convergenceGroups {
				return nil, fmt.Errorf("stale: %s has %d tracked jobs, fewer than %d arrival groups", strings.ReplaceAll(k, "\x00", " "), len(order), convergenceGroups)
			}
			slices.SortFunc(order, func(a, b int) int {
				if c := cmp.Compare(arrival[a], arrival[b]); c != 0 {
					return c
				}
				return cmp.Compare(a, b)
			})
			means := map[string][]float64{}
			for v, recs := range byVar {
				jct := map[int]float64{}
				for _, j := range recs {
					if j.Tracked {
						jct[j.ID] = j.JCT
					}
				}
				if len(jct) != len(order) {
					return nil, fmt.Errorf("stale: %s under %s tracks %d jobs, the oracle %d", strings.ReplaceAll(k, "\x00", " "), v, len(jct), len(order))
				}
				means[v] = groupMeans(order, jct)
			}
			for _, v := range convergenceVariants {
				if means[v] == nil {
					return nil, fmt.Errorf("stale: %s kept no job records under %s", strings.ReplaceAll(k, "\x00", " "), v)
				}
				r := make([]float64, convergenceGroups)
				for g := range r {
					r[g] = means[v][g] / means["oracle"][g]
				}
				logs[v] = append(logs[v], r)
			}
			runs++
		}
		if runs == 0 {
			continue // the plan has no run of this family: no curve
		}
		c := Convergence{Family: fam, Runs: runs, Ratio: map[string][]float64{}}
		for _, v := range convergenceVariants {
			for g := range convergenceGroups {
				var xs []float64
				for _, r := range logs[v] {
					xs = append(xs, r[g])
				}
				c.Ratio[v] = append(c.Ratio[v], metrics.GeoMean(xs))
			}
		}
		out = append(out, c)
	}
	return out, nil
}

// writeConvergence writes convergence.csv and one chart per family
// (convergence-FAMILY.png and .svg) into dir, and returns the charts'
// base names.
func writeConvergence(dir string, cs []Convergence, d report.Drawer) ([]string, error) {
	var b strings.Builder
	b.WriteString("family,runs,arrival_group")
	for _, v := range convergenceVariants {
		b.WriteString("," + strings.NewReplacer("+", "_", "-", "_").Replace(v) + "_vs_oracle")
	}
	b.WriteString("\n")
	var bases []string
	for _, c := range cs {
		ch := &report.LineChart{Title: fmt.Sprintf("Stale profiles, %s: mean JCT by arrival group over the oracle's (geomean of %d runs)", c.Family, c.Runs),
			XLabel: fmt.Sprintf("jobs by arrival, in %d groups", convergenceGroups), YLabel: "mean JCT / oracle's", Mark: report.LinesPoints}
		xs := make([]float64, convergenceGroups)
		for g := range xs {
			xs[g] = float64(g + 1)
			fmt.Fprintf(&b, "%s,%d,%d", c.Family, c.Runs, g+1)
			for _, v := range convergenceVariants {
				fmt.Fprintf(&b, ",%.4f", c.Ratio[v][g])
			}
			b.WriteString("\n")
		}
		for _, v := range convergenceVariants {
			ch.Series = append(ch.Series, report.Series{Name: v, X: xs, Y: c.Ratio[v]})
		}
		base := "convergence-" + c.Family
		if err := report.Save(d, ch, dir, base); err != nil {
			return nil, err
		}
		bases = append(bases, base)
	}
	if err := os.WriteFile(filepath.Join(dir, "convergence.csv"), []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return bases, nil
}

func (r *StaleResult) convergenceMarkdown(b *strings.Builder) {
	fmt.Fprintf(b, "### How fast learning closes the gap\n\nEach run's jobs by arrival in %d groups of equal size; each group's mean JCT over the oracle's for the same jobs, geometric mean over the family's runs (every trace and draw). The first group arrives while the learner has seen little. Plots: %s/convergence-*.svg; numbers: %s/convergence.csv.\n\n", convergenceGroups, StaleDir, StaleDir)
	b.WriteString("| family | variant |")
	for g := range convergenceGroups {
		fmt.Fprintf(b, " %d |", g+1)
	}
	b.WriteString("\n|---|---|" + strings.Repeat("---|", convergenceGroups) + "\n")
	for _, c := range r.Convergence {
		for _, v := range convergenceVariants {
			fmt.Fprintf(b, "| %s | %s |", c.Family, v)
			for _, x := range c.Ratio[v] {
				fmt.Fprintf(b, " %.3f |", x)
			}
			b.WriteString("\n")
		}
	}
	b.WriteString("\n")
}
