package reproduce

import (
	"encoding/csv"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/palsched/pal/bench"
	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/metrics"
	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/schedule"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/report"
	"github.com/palsched/pal/sim"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// HivedOptions shapes `pal reproduce hived`: the sharing-anomaly
// experiment of the HiveD paper on the Philly trace with its real VCs.
type HivedOptions struct {
	Out   string
	Quick bool    // only the first HivedQuickJobs jobs (CI)
	Round float64 // seconds (0: 300)
	Log   io.Writer
}

// HivedQuickJobs is the trace prefix --quick runs.
const HivedQuickJobs = 3000

// HivedRow is one tenant's outcome under one setup.
type HivedRow struct {
	Scheduler, Load, Setup, VC string
	Jobs                       int
	MeanQueue, P99Queue        float64 // seconds
	MeanJCT                    float64
	// Anomaly is max(0, mean queue here − mean queue on the reference):
	// the private cluster of the VC's cells for quota, and the VC alone on
	// the same cells for HiveD (which is exactly its private cluster of
	// cells under HiveD's own packing).
	Anomaly float64
}

// HivedReport is what the experiment measured.
type HivedReport struct {
	Rows    []HivedRow
	Dir     string
	Dropped map[string]int
	Jobs    int
	// HivedWall is the wall time of the whole-trace HiveD run (FIFO, normal
	// load).
	HivedWall time.Duration
	// Binding: preemptions and mean JCT with opportunistic load, dynamic
	// versus static binding.
	Binding []BindingRow
	// Fragmentation: fraction of rounds whose free GPUs could host a
	// whole-node job by count but no node is entirely free.
	Fragmentation map[string]float64
	// Overhead: median tenancy decision time by cluster size.
	Overhead []TenancyOverheadRow
	// Variability: plain HiveD against HiveD binding the fastest equally
	// safe cells (hived-pm), GPU values drawn from the Longhorn profile.
	Variability []VariabilityRow
}

// VariabilityRow is one tenancy mode's outcome with variable GPUs.
type VariabilityRow struct {
	Tenancy          string
	MeanJCT, P99JCT  float64
	MeanQueue        float64
	GPUValues, Cells string
}

// BindingRow is one binding mode's outcome with opportunistic load.
type BindingRow struct {
	Binding                   string
	Preemptions, Opportunists int
	MeanJCT                   float64
}

// TenancyOverheadRow is the median time of one gang's tenancy decision.
type TenancyOverheadRow struct {
	GPUs, VCs int
	MedianUS  float64
}

// hivedScheduler is one intra-VC scheduler of the paper's three.
type hivedScheduler struct {
	label, sched, placer string
}

var hivedSchedulers = []hivedScheduler{
	{"yarn-cs (fifo, spread)", "fifo", "spread"},
	{"tiresias (tiresias-las, packed-sticky)", "tiresias-las", "packed-sticky"},
	{"gandiva-like (fifo, packed-nonsticky)", "fifo", "packed-nonsticky"},
}

// RunHived runs quota, private and HiveD under each scheduler, at the
// trace's own load and at twice it (arrivals twice as dense), and writes
// anomaly.csv, one PNG/SVG per scheduler and load, and hived.md.
func RunHived(o HivedOptions) (*HivedReport, error) {
	if o.Round == 0 {
		o.Round = 300
	}
	logf := func(format string, a ...any) {
		if o.Log != nil {
			fmt.Fprintf(o.Log, format+"\n", a...)
		}
	}
	pv, err := workload.EmbeddedPhillyVCTrace(8)
	if err != nil {
		return nil, err
	}
	if o.Quick && len(pv.Trace.Jobs) > HivedQuickJobs {
		pv.Trace.Jobs = pv.Trace.Jobs[:HivedQuickJobs]
	}
	cells := tenant.PhillyCells(pv.VCs)
	layout, err := tenant.NewLayout(cells)
	if err != nil {
		return nil, err
	}
	probe, err := tenancy.New(cells)
	if err != nil {
		return nil, err
	}
	if err := layout.Validate(pv.Trace, true); err != nil {
		return nil, err
	}
	dir := filepath.Join(o.Out, "hived")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	rep := &HivedReport{Dir: dir, Dropped: pv.Dropped, Jobs: len(pv.Trace.Jobs)}
	loads := []struct {
		name  string
		scale float64
	}{{"normal", 1}, {"high (2x arrivals)", 0.5}}
	for _, ld := range loads {
		tr := scaleArrivals(pv.Trace, ld.scale)
		for _, hs := range hivedSchedulers {
			run := func(c *cluster.Cluster, t *workload.Trace, st policy.Tenancy) ([]metrics.JobRecord, error) {
				sch, err := schedule.New(hs.sched)
				if err != nil {
					return nil, err
				}
				pl, err := place.New(hs.placer)
				if err != nil {
					return nil, err
				}
				res, err := sim.Run(sim.Config{Cluster: c, Trace: t, Scheduler: sch, Placer: pl, Tenancy: st,
					Round: o.Round, Locality: sim.ConstantLocality(1)})
				if err != nil {
					return nil, err
				}
				return res.Jobs, nil
			}
			perVC := func(mk func(vc string) (*cluster.Cluster, policy.Tenancy, error)) ([]metrics.JobRecord, error) {
				var all []metrics.JobRecord
				for _, vc := range layout.VCs() {
					sub := subTrace(tr, vc)
					if sub == nil {
						continue
					}
					c, st, err := mk(vc)
					if err != nil {
						return nil, err
					}
					recs, err := run(c, sub, st)
					if err != nil {
						return nil, fmt.Errorf("VC %s: %w", vc, err)
					}
					all = append(all, recs...)
				}
				return all, nil
			}
			start := time.Now()
			quota, err := run(layout.Cluster, tr, tenant.NewQuota(layout))
			if err != nil {
				return nil, fmt.Errorf("%s quota: %w", hs.label, err)
			}
			logf("hived: %s, %s load: quota done (%s)", hs.label, ld.name, time.Since(start).Round(time.Millisecond))
			private, err := perVC(func(vc string) (*cluster.Cluster, policy.Tenancy, error) {
				pcfg, err := probe.PrivateConfig(vc)
				if err != nil {
					return nil, nil, err
				}
				pl, err := tenant.NewLayout(pcfg)
				if err != nil {
					return nil, nil, err
				}
				return pl.Cluster, nil, nil
			})
			if err != nil {
				return nil, fmt.Errorf("%s private: %w", hs.label, err)
			}
			h, err := tenant.NewHiveD(layout)
			if err != nil {
				return nil, err
			}
			start = time.Now()
			hived, err := run(layout.Cluster, tr, h)
			if err != nil {
				return nil, fmt.Errorf("%s hived: %w", hs.label, err)
			}
			wall := time.Since(start)
			if hs.sched == "fifo" && hs.placer == "spread" && ld.scale == 1 {
				rep.HivedWall = wall
			}
			logf("hived: %s, %s load: hived done (%s)", hs.label, ld.name, wall.Round(time.Millisecond))
			alone, err := perVC(func(vc string) (*cluster.Cluster, policy.Tenancy, error) {
				acfg, err := probe.AloneConfig(vc)
				if err != nil {
					return nil, nil, err
				}
				al, err := tenant.NewLayout(acfg)
				if err != nil {
					return nil, nil, err
				}
				st, err := tenant.NewHiveD(al)
				return al.Cluster, st, err
			})
			if err != nil {
				return nil, fmt.Errorf("%s hived alone: %w", hs.label, err)
			}
			priv, solo := byVC(private), byVC(alone)
			for _, setup := range []struct {
				name string
				recs []metrics.JobRecord
				ref  map[string]vcStat
			}{{"quota", quota, priv}, {"private", private, priv}, {"hived", hived, solo}} {
				stats := byVC(setup.recs)
				for _, vc := range layout.VCs() {
					st, ok := stats[vc]
					if !ok {
						continue
					}
					rep.Rows = append(rep.Rows, HivedRow{Scheduler: hs.label, Load: ld.name, Setup: setup.name, VC: vc, Jobs: st.jobs,
						MeanQueue: st.meanQ, P99Queue: st.p99Q, MeanJCT: st.meanJCT, Anomaly: math.Max(0, st.meanQ-setup.ref[vc].meanQ)})
				}
			}
		}
	}
	if err := rep.studies(pv.Trace, layout, o, logf); err != nil {
		return nil, err
	}
	if err := rep.variability(pv.Trace, cells, o, logf); err != nil {
		return nil, err
	}
	if err := rep.write(); err != nil {
		return nil, err
	}
	return rep, nil
}

// studies runs the buddy-allocation studies: dynamic versus static binding
// under opportunistic load, fragmentation under quota and HiveD, and the
// decision time by cluster size.
func (rep *HivedReport) studies(tr *workload.Trace, layout *tenant.Layout, o HivedOptions, logf func(string, ...any)) error {
	// Every fifth job runs opportunistically, beside the guaranteed ones.
	opp := scaleArrivals(tr, 1)
	nOpp := 0
	for i := range opp.Jobs {
		if opp.Jobs[i].ID%5 == 0 {
			opp.Jobs[i].VCPriority = tenancy.Opportunistic
			nOpp++
		}
	}
	for _, mode := range []string{"dynamic", "static"} {
		var h *tenant.HiveD
		var err error
		if mode == "static" {
			h, err = tenant.NewHiveDStatic(layout)
		} else {
			h, err = tenant.NewHiveD(layout)
		}
		if err != nil {
			return err
		}
		pl, _ := place.New("spread")
		res, err := sim.Run(sim.Config{Cluster: layout.Cluster, Trace: opp, Scheduler: schedule.FIFO{}, Placer: pl, Tenancy: h,
			Round: o.Round, Locality: sim.ConstantLocality(1)})
		if err != nil {
			return fmt.Errorf("%s binding: %w", mode, err)
		}
		rep.Binding = append(rep.Binding, BindingRow{Binding: mode, Preemptions: res.Summary.Preemptions, Opportunists: nOpp, MeanJCT: res.Summary.AvgJCT})
		logf("hived: %s binding done (%d preemptions)", mode, res.Summary.Preemptions)
	}
	// Fragmentation, FIFO at twice the trace's load (at its own load the
	// 352 nodes nearly always have a whole node free).
	dense := scaleArrivals(tr, 0.5)
	rep.Fragmentation = map[string]float64{}
	node := len(layout.Cluster.Nodes[0].GPUs)
	for _, mode := range []string{"quota", "hived"} {
		var st policy.Tenancy = tenant.NewQuota(layout)
		if mode == "hived" {
			h, err := tenant.NewHiveD(layout)
			if err != nil {
				return err
			}
			st = h
		}
		used := make([]int, layout.Cluster.NumNodes())
		frag, rounds := 0, 0
		pl, _ := place.New("spread")
		_, err := sim.Run(sim.Config{Cluster: layout.Cluster, Trace: dense, Scheduler: schedule.FIFO{}, Placer: pl, Tenancy: st,
			Round: o.Round, Locality: sim.ConstantLocality(1),
			Observe: func(_ float64, _ []*workload.Job, alloc [][]int) {
				clear(used)
				for _, g := range alloc {
					for _, x := range g {
						used[layout.Cluster.GPUs[x].Node]++
					}
				}
				free, whole := 0, false
				for _, u := range used {
					free += node - u
					whole = whole || u == 0
				}
				rounds++
				if free >= node && !whole {
					frag++
				}
			}})
		if err != nil {
			return fmt.Errorf("fragmentation %s: %w", mode, err)
		}
		rep.Fragmentation[mode] = float64(frag) / float64(max(rounds, 1))
	}
	// Overhead by cluster size: racks of 8 nodes, about one VC per 35 nodes.
	sizes := []int{64, 432, 3456}
	if o.Quick {
		sizes = sizes[:2]
	}
	for _, n := range sizes {
		vcs := max(1, n/35)
		st, err := bench.TenancyDecision(bench.TenancyOptions{Nodes: n, NodesPerRack: 8, VCs: vcs, Reps: 2000, Seed: 1})
		if err != nil {
			return err
		}
		rep.Overhead = append(rep.Overhead, TenancyOverheadRow{GPUs: st.GPUs, VCs: vcs, MedianUS: st.MedianUS})
	}
	return nil
}

// variability runs the trace under hived and hived-pm with GPU values
// drawn from the Longhorn profile (seed 42), FIFO, the trace's load. The
// cells are written to cells.yaml beside the results (an input record).
func (rep *HivedReport) variability(tr *workload.Trace, cells *tenancy.Config, o HivedOptions, logf func(string, ...any)) error {
	path := filepath.Join(rep.Dir, "cells.yaml")
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := tenancy.WriteYAML(f, cells); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	for _, mode := range []string{"hived", "hived-pm"} {
		opts, err := experiment.Preset("artifact")
		if err != nil {
			return err
		}
		opts.Trace, opts.Cells, opts.Tenancy = "philly-vc", path, mode
		opts.Placements, opts.Round, opts.LocalityPenalty = "packed-sticky", o.Round, 1
		in, err := experiment.PrepareWith(opts, tr)
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		r, err := in.Run("packed-sticky")
		if err != nil {
			return fmt.Errorf("%s: %w", mode, err)
		}
		rep.Variability = append(rep.Variability, VariabilityRow{Tenancy: mode, MeanJCT: r.Summary.AvgJCT, P99JCT: r.Summary.P99JCT,
			MeanQueue: r.Summary.AvgWait, GPUValues: in.RawFrom, Cells: path})
		logf("hived: %s with variable GPUs done (mean JCT %.0f s)", mode, r.Summary.AvgJCT)
	}
	return nil
}

func scaleArrivals(tr *workload.Trace, k float64) *workload.Trace {
	out := &workload.Trace{Name: tr.Name, Jobs: slices.Clone(tr.Jobs), HasTracked: tr.HasTracked}
	for i := range out.Jobs {
		out.Jobs[i].Submit *= k
	}
	return out
}

func subTrace(tr *workload.Trace, vc string) *workload.Trace {
	var jobs []workload.Spec
	for _, j := range tr.Jobs {
		if j.VC == vc {
			jobs = append(jobs, j)
		}
	}
	if len(jobs) == 0 {
		return nil
	}
	return &workload.Trace{Name: tr.Name + " (VC " + vc + ")", Jobs: jobs}
}

type vcStat struct {
	jobs                 int
	meanQ, p99Q, meanJCT float64
}

// byVC is each VC's queueing delay (JCT minus run time: the wait before
// the first start plus every wait after a preemption) and JCT.
func byVC(recs []metrics.JobRecord) map[string]vcStat {
	q := map[string][]float64{}
	jct := map[string][]float64{}
	for _, r := range recs {
		q[r.VC] = append(q[r.VC], r.Wait)
		jct[r.VC] = append(jct[r.VC], r.JCT)
	}
	out := map[string]vcStat{}
	for vc, xs := range q {
		s := vcStat{jobs: len(xs), meanQ: metrics.Mean(xs), meanJCT: metrics.Mean(jct[vc])}
		sorted := slices.Clone(xs)
		slices.Sort(sorted)
		s.p99Q = metrics.Quantile(sorted, 0.99)
		out[vc] = s
	}
	return out
}

func (r *HivedReport) write() error {
	f, err := os.Create(filepath.Join(r.Dir, "anomaly.csv"))
	if err != nil {
		return err
	}
	cw := csv.NewWriter(f)
	cw.Write([]string{"scheduler", "load", "setup", "vc", "jobs", "mean_queue_s", "p99_queue_s", "mean_jct_s", "anomaly_s"})
	for _, x := range r.Rows {
		cw.Write([]string{x.Scheduler, x.Load, x.Setup, x.VC, strconv.Itoa(x.Jobs), ff(x.MeanQueue), ff(x.P99Queue), ff(x.MeanJCT), ff(x.Anomaly)})
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	var md strings.Builder
	md.WriteString("# Sharing anomaly (HiveD, OSDI'20) on the Philly trace with its real VCs\n\n")
	fmt.Fprintf(&md, "Inputs: embedded philly/philly.csv (Pollux's processed Philly job log), %d jobs of the 11 large VCs; node counts from philly/philly_vc.csv (352 nodes of 8 GPUs, PCIe pairs and sockets inside); rows left out:", r.Jobs)
	keys := make([]string, 0, len(r.Dropped))
	for k := range r.Dropped {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		fmt.Fprintf(&md, " %d (%s)", r.Dropped[k], k)
	}
	md.WriteString(". Durations are the trace's, at uniform GPU speed; no locality penalty; pods: the whole job up to a node, else the largest divisor of its GPUs up to 8. Queueing delay = JCT − run time (first wait plus waits after preemptions). Anomaly(v) = max(0, Q_shared(v) − Q_reference(v)); the reference is the VC's private cluster of its cells for quota, and the VC alone on the same cells for HiveD.\n\n")
	md.WriteString("| scheduler | load | quota: max anomaly (min) | quota: mean anomaly (min) | quota: VCs with anomaly | hived: max anomaly (min) | hived: mean anomaly (min) | mean JCT quota / hived / private (h) |\n|---|---|---|---|---|---|---|---|\n")
	type key struct{ s, l string }
	var order []key
	agg := map[key]map[string][]HivedRow{}
	for _, x := range r.Rows {
		k := key{x.Scheduler, x.Load}
		if agg[k] == nil {
			agg[k] = map[string][]HivedRow{}
			order = append(order, k)
		}
		agg[k][x.Setup] = append(agg[k][x.Setup], x)
	}
	for _, k := range order {
		qm, qa, qn := anomalyStats(agg[k]["quota"])
		hm, ha, _ := anomalyStats(agg[k]["hived"])
		fmt.Fprintf(&md, "| %s | %s | %.1f | %.1f | %d of %d | %.1f | %.1f | %.2f / %.2f / %.2f |\n", k.s, k.l, qm/60, qa/60, qn, len(agg[k]["quota"]), hm/60, ha/60,
			meanJCT(agg[k]["quota"])/3600, meanJCT(agg[k]["hived"])/3600, meanJCT(agg[k]["private"])/3600)
		if err := r.plot(k.s, k.l, agg[k]); err != nil {
			return err
		}
	}
	md.WriteString("\n| claim | paper | ours |\n|---|---|---|\n")
	md.WriteString("| quota-based sharing shows an anomaly for some tenants | up to 1,000 min extra queueing [P] | see the quota columns above |\n")
	md.WriteString("| HiveD removes the anomaly | 0 for every tenant and scheduler [P] | see the hived columns above |\n")
	md.WriteString("\n## Dynamic versus static binding (opportunistic load)\n\nEvery fifth job runs opportunistically (priority -1); FIFO, the trace's load. Dynamic binding prefers cells with the fewest opportunistic GPUs; static binding fixes every VC cell up front.\n\n| binding | preemptions | opportunistic jobs | mean JCT (h) |\n|---|---|---|---|\n")
	for _, b := range r.Binding {
		fmt.Fprintf(&md, "| %s | %d | %d | %.2f |\n", b.Binding, b.Preemptions, b.Opportunists, b.MeanJCT/3600)
	}
	md.WriteString("\nPaper: fewer preemptions with dynamic binding (figure not verified).\n")
	md.WriteString("\n## Fragmentation\n\nFraction of rounds in which the free GPUs add up to a whole node but no node is entirely free (FIFO, spread placement under quota, twice the trace's load):\n\n| setup | fraction of rounds |\n|---|---|\n")
	for _, k := range []string{"quota", "hived"} {
		fmt.Fprintf(&md, "| %s | %.3f |\n", k, r.Fragmentation[k])
	}
	md.WriteString("\nPaper (talk, not verified): multi-level cells cut fragmentation by over 20%.\n")
	md.WriteString("\n## Overhead\n\nMedian time of one gang's tenancy decision (intra-VC placement, buddy binding, commit) on a half-loaded cluster of 8-GPU nodes in racks of 8 (`pal bench tenancy`):\n\n| GPUs | VCs | median (µs) |\n|---|---|---|\n")
	for _, x := range r.Overhead {
		fmt.Fprintf(&md, "| %d | %d | %.1f |\n", x.GPUs, x.VCs, x.MedianUS)
	}
	if len(r.Variability) == 2 {
		a, b := r.Variability[0], r.Variability[1]
		fmt.Fprintf(&md, "\n## Variability inside tenancy\n\nGPU values: %s. hived-pm binds, among cells equally good for safety, health and opportunistic load, the one with the best PM-scores for the job's class, and places a job that fits one node on its VC's free bound GPUs by PAL's L×V order for its class (FIFO, the trace's load, no locality penalty).\n\n| tenancy | mean JCT (s) | p99 JCT (s) | mean queueing (s) |\n|---|---|---|---|\n", a.GPUValues)
		for _, x := range r.Variability {
			fmt.Fprintf(&md, "| %s | %.0f | %.0f | %.0f |\n", x.Tenancy, x.MeanJCT, x.P99JCT, x.MeanQueue)
		}
		fmt.Fprintf(&md, "\nhived-pm against hived: mean JCT %+.1f%%.\n", 100*(b.MeanJCT/a.MeanJCT-1))
	}
	if r.HivedWall > 0 {
		fmt.Fprintf(&md, "\nThe whole trace under HiveD (yarn-cs, normal load) took %s of wall time.\n", r.HivedWall.Round(time.Millisecond))
	}
	return os.WriteFile(filepath.Join(r.Dir, "hived.md"), []byte(md.String()), 0o644)
}

func anomalyStats(rows []HivedRow) (maxA, meanA float64, n int) {
	for _, x := range rows {
		maxA = math.Max(maxA, x.Anomaly)
		meanA += x.Anomaly
		if x.Anomaly > 0 {
			n++
		}
	}
	if len(rows) > 0 {
		meanA /= float64(len(rows))
	}
	return maxA, meanA, n
}

// meanJCT is the job-weighted mean JCT over the VCs.
func meanJCT(rows []HivedRow) float64 {
	sum, n := 0.0, 0
	for _, x := range rows {
		sum += x.MeanJCT * float64(x.Jobs)
		n += x.Jobs
	}
	if n == 0 {
		return math.NaN()
	}
	return sum / float64(n)
}

func (r *HivedReport) plot(sched, load string, rows map[string][]HivedRow) error {
	var cats []string
	var q, h []float64
	for i, x := range rows["quota"] {
		cats = append(cats, x.VC)
		q = append(q, x.Anomaly/60)
		h = append(h, rows["hived"][i].Anomaly/60)
	}
	c := report.BarChart{Title: fmt.Sprintf("Sharing anomaly per VC: %s, %s load", sched, load), XLabel: "VC", YLabel: "extra mean queueing (min)",
		Categories: cats, Series: []report.BarSeries{{Name: "quota", Values: q}, {Name: "hived", Values: h}}}
	p, err := c.Plot()
	if err != nil {
		return err
	}
	base := "anomaly-" + strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(strings.SplitN(sched, " ", 2)[0]+"-"+strings.SplitN(load, " ", 2)[0])
	return report.SavePlot(p, r.Dir, base)
}

func ff(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) }
