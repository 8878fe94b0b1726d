// Package whatif sums up the jobs a forecast finds waiting (how many
// start and end, their mean wait and JCT, and each VC's mean wait) and
// prints a what-if beside the forecast it changes. pal sim and pal-kube
// forecast print their what-ifs with it, so the two tables read alike.
// It imports nothing of ours.
package whatif

import (
	"fmt"
	"io"
	"math"
	"slices"
)

// Job is one waiting job as a forecast sees it: its VC ("" without
// tenancy), its arrival, and its forecast start and end (-1: not within
// the forecast).
type Job struct {
	VC                     string
	Arrival, Start, Finish float64
}

// Summary sums up a forecast's waiting jobs: how many start and end
// within it, and their mean wait and JCT from arrival over those that
// start (end); NaN when none does. VCs are the per-VC waits, in VC name
// order; none when no job names a VC.
type Summary struct {
	Waiting, Started, Ended int
	MeanWait, MeanJCT       float64
	VCs                     []VCWait `json:",omitempty"`
}

// VCWait is one VC's waiting jobs: how many, how many start, and their
// mean wait (NaN when none starts).
type VCWait struct {
	VC               string
	Waiting, Started int
	MeanWait         float64
}

// Summarize reads jobs.
func Summarize(jobs []Job) Summary {
	s := Summary{Waiting: len(jobs), MeanWait: math.NaN(), MeanJCT: math.NaN()}
	var wait, jct float64
	byVC := map[string]*VCWait{}
	vcWait := map[string]float64{}
	for _, j := range jobs {
		var v *VCWait
		if j.VC != "" {
			if v = byVC[j.VC]; v == nil {
				v = &VCWait{VC: j.VC}
				byVC[j.VC] = v
			}
			v.Waiting++
		}
		if j.Start >= 0 {
			s.Started++
			wait += j.Start - j.Arrival
			if v != nil {
				v.Started++
				vcWait[j.VC] += j.Start - j.Arrival
			}
		}
		if j.Finish >= 0 {
			s.Ended++
			jct += j.Finish - j.Arrival
		}
	}
	if s.Started > 0 {
		s.MeanWait = wait / float64(s.Started)
	}
	if s.Ended > 0 {
		s.MeanJCT = jct / float64(s.Ended)
	}
	for _, name := range slices.Sorted(func(yield func(string) bool) {
		for k := range byVC {
			if !yield(k) {
				return
			}
		}
	}) {
		v := byVC[name]
		v.MeanWait = math.NaN()
		if v.Started > 0 {
			v.MeanWait = vcWait[name] / float64(v.Started)
		}
		s.VCs = append(s.VCs, *v)
	}
	return s
}

// Write prints now and then side by side, tab-separated for a
// tabwriter: a heading line naming what waits (unit: "waiting_jobs",
// "waiting_gangs"), how many start, the mean wait and JCT, and the mean
// wait of each VC either names (a VC absent from one side shows "-").
// It reports whether there were per-VC lines.
func Write(w io.Writer, unit string, now, then Summary) (bool, error) {
	lines := []string{
		fmt.Sprintf("%s\tnow\twhat-if\n", unit),
		fmt.Sprintf("started\t%d of %d\t%d of %d\n", now.Started, now.Waiting, then.Started, then.Waiting),
		fmt.Sprintf("mean_wait_s\t%s\t%s\n", Secs(now.MeanWait), Secs(then.MeanWait)),
		fmt.Sprintf("mean_jct_s\t%s\t%s\n", Secs(now.MeanJCT), Secs(then.MeanJCT)),
	}
	var names []string
	for _, s := range []Summary{now, then} {
		for _, v := range s.VCs {
			if !slices.Contains(names, v.VC) {
				names = append(names, v.VC)
			}
		}
	}
	slices.Sort(names)
	wait := func(s Summary, vc string) string {
		for _, v := range s.VCs {
			if v.VC == vc {
				return fmt.Sprintf("%s (%d of %d)", Secs(v.MeanWait), v.Started, v.Waiting)
			}
		}
		return "-"
	}
	for _, vc := range names {
		lines = append(lines, fmt.Sprintf("mean_wait_s VC %s\t%s\t%s\n", vc, wait(now, vc), wait(then, vc)))
	}
	for _, l := range lines {
		if _, err := io.WriteString(w, l); err != nil {
			return false, err
		}
	}
	return len(names) > 0, nil
}

// Secs is a time in seconds to one decimal, "-" for NaN.
func Secs(v float64) string {
	if math.IsNaN(v) {
		return "-"
	}
	return fmt.Sprintf("%.1f", v)
}
