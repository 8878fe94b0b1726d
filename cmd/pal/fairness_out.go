package main

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"

	"github.com/jedib0t/go-pretty/v6/table"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/fairness"
)

// fairRun is one run's fairness under the name its row carries (a
// placement in pal sim, a policy in pal themis sim).
type fairRun struct {
	label string
	f     *fairness.RunFairness
}

// simFairRuns are the runs of pal sim that measured fairness.
func simFairRuns(runs []*experiment.RunResult) []fairRun {
	var out []fairRun
	for _, r := range runs {
		if r.Fairness != nil {
			out = append(out, fairRun{r.Placement, r.Fairness})
		}
	}
	return out
}

// fairCSVHead are the fairness columns pal sim's CSV appends.
var fairCSVHead = []string{"apps", "max_rho", "p95_rho", "apps_rho_gt_2", "mean_rho", "jain", "gpu_time_s"}

func fairCSVRow(f *fairness.RunFairness) []string {
	return []string{strconv.Itoa(f.Apps), f6(f.MaxRho), f6(f.P95Rho), strconv.Itoa(f.Over2), f6(f.MeanRho), f6(f.Jain), f2(f.GPUTime)}
}

// printFairness is the ρ table below pal sim's JCT table: one row per
// run, every time in seconds.
func printFairness(w io.Writer, head string, runs []fairRun) {
	fmt.Fprintln(w)
	fmt.Fprintln(w, "finish-time fairness: ρ = an app's (finish − arrival) over its ideal time with 1/N of the cluster (1 = its fair share)")
	t := newTable(w)
	t.AppendHeader(table.Row{head, "apps", "max ρ", "p95 ρ", "apps ρ > 2", "mean ρ", "Jain", "GPU time (GPU-s)"})
	for _, r := range runs {
		t.AppendRow(table.Row{r.label, r.f.Apps, f3(r.f.MaxRho), f3(r.f.P95Rho), r.f.Over2, f3(r.f.MeanRho), f3(r.f.Jain), f0(r.f.GPUTime)})
	}
	t.Render()
}

// writeApps writes --apps-out: one row per app and run, the run named
// in the first column (head: placement or policy).
func writeApps(path, head string, runs []fairRun) error {
	g := func(x float64) string { return strconv.FormatFloat(x, 'g', 10, 64) }
	return writeCSV(path, []string{head, "app", "jobs", "arrival_s", "finish_s", "t_shared_s", "work_gpu_s", "demand_gpus", "n_avg", "t_ideal_s", "rho", "held_gpu_s"},
		func(cw *csv.Writer) {
			for _, r := range runs {
				for _, a := range r.f.PerApp {
					cw.Write([]string{r.label, a.Name, strconv.Itoa(a.Jobs), g(a.Arrival), g(a.Finish), g(a.TShared), g(a.Work),
						strconv.Itoa(a.Demand), g(a.NAvg), g(a.TIdeal), g(a.Rho), g(a.Held)})
				}
			}
		})
}

func f6(x float64) string { return strconv.FormatFloat(x, 'f', 6, 64) }
