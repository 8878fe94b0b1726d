// Command hivedspeed measures HiveD's guarantee under variable GPU speeds:
// every VC's mean wait and JCT under hived, hived-pm and hived-speed
// against its private reference (its cells drawn K times from the
// physical cluster), on the synthetic 96-GPU week and on the Philly
// trace with its VCs, GPU values drawn from the default profile. It
// prints a markdown record; hack/hived-speed.sh runs it. With
// -split-bound it runs nothing and bounds instead what any static split
// of the synthetic week's nodes can reach (split.go).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/reproduce/paper"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

var modes = []string{"private", "hived", "hived-pm", "hived-speed"}

type setting struct {
	name  string
	cells *tenancy.Config
	tr    *workload.Trace
	seed  uint64
}

type result struct {
	vcs  map[string][]experiment.VCFigures // by mode
	jct  map[string]float64
	wall map[string]time.Duration
	err  error
}

func main() {
	seeds := flag.String("seeds", "1,2,3", "synthetic seeds (each also seeds the GPU values)")
	loads := flag.String("loads", "0.7,0.9,1.1", "synthetic loads")
	days := flag.Float64("days", 7, "synthetic arrival window, days")
	philly := flag.String("philly", "1x,2x", "Philly arrival scales (1x, 2x; empty: none)")
	phillyJobs := flag.Int("philly-jobs", 0, "Philly trace prefix (0: all)")
	draws := flag.Int("draws", 8, "private draws K")
	workers := flag.Int("workers", runtime.GOMAXPROCS(0), "settings run at once")
	round := flag.Float64("round", 60, "round, seconds")
	placement := flag.String("placement", "spread", "placement inside the VCs")
	modeList := flag.String("modes", strings.Join(modes, ","), "modes to run (private is always run or read from -cache)")
	cache := flag.String("cache", "", "directory keeping each setting's private reference (it does not depend on the hived modes); empty: none")
	bound := flag.Bool("split-bound", false, "instead of running, score every static split of the synthetic settings' nodes against the private draws (see splitBound)")
	flag.Parse()
	modes = append([]string{"private"}, slices.DeleteFunc(split(*modeList), func(m string) bool { return m == "private" })...)
	dir, err := os.MkdirTemp("", "hivedspeed")
	if err != nil {
		fail(err)
	}
	defer os.RemoveAll(dir)
	var sets []setting
	for _, s := range split(*seeds) {
		seed, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			fail(err)
		}
		for _, l := range split(*loads) {
			L, err := strconv.ParseFloat(l, 64)
			if err != nil {
				fail(err)
			}
			cells, tr := paper.SyntheticHived(L, *days, seed)
			sets = append(sets, setting{name: fmt.Sprintf("synthetic L=%.1f seed %d", L, seed), cells: cells, tr: tr, seed: seed})
		}
	}
	if *bound {
		for _, s := range sets {
			splitBound(s, *draws, dir, *days == 7 && strings.HasPrefix(s.name, "synthetic L=1.1 "))
		}
		return
	}
	if *philly != "" {
		pv, err := workload.EmbeddedPhillyVCTrace(8)
		if err != nil {
			fail(err)
		}
		if *phillyJobs > 0 && len(pv.Trace.Jobs) > *phillyJobs {
			pv.Trace.Jobs = pv.Trace.Jobs[:*phillyJobs]
		}
		cells := tenant.PhillyCells(pv.VCs)
		for _, sc := range split(*philly) {
			k := map[string]float64{"1x": 1, "2x": 0.5, "4x": 0.25}[sc]
			if k == 0 {
				fail(fmt.Errorf("-philly %s: want 1x, 2x or 4x", sc))
			}
			tr := &workload.Trace{Name: pv.Trace.Name, Jobs: append([]workload.Spec(nil), pv.Trace.Jobs...), HasTracked: pv.Trace.HasTracked}
			for i := range tr.Jobs {
				tr.Jobs[i].Submit *= k
			}
			sets = append(sets, setting{name: "philly " + sc, cells: cells, tr: tr, seed: 42})
		}
	}
	res := make([]result, len(sets))
	var wg sync.WaitGroup
	next := make(chan int)
	for range *workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				res[i] = runSetting(sets[i], i, dir, *cache, *draws, *round, *placement)
				fmt.Fprintf(os.Stderr, "hivedspeed: %s done\n", sets[i].name)
			}
		}()
	}
	for i := range sets {
		next <- i
	}
	close(next)
	wg.Wait()
	fmt.Printf("# hived-speed against private clusters (K = %d draws)\n\n", *draws)
	fmt.Printf("FIFO + %s inside each VC, rounds of %g s, GPU values from the default profile (longhorn) drawn with each setting's seed, PM-scores as pal sim bins them. Wait = JCT - run time. ok = every VC's mean wait <= its private mean wait + one round.\n\n", *placement, *round)
	fmt.Println("| setting | mode | cluster mean JCT (s) | worst VC: wait - private (s) | ok | per VC: wait (JCT) s, speed A |")
	fmt.Println("|---|---|---|---|---|---|")
	for i, s := range sets {
		r := res[i]
		if r.err != nil {
			fmt.Printf("| %s | error | %v | | | |\n", s.name, r.err)
			continue
		}
		priv := map[string]experiment.VCFigures{}
		for _, v := range r.vcs["private"] {
			priv[v.VC] = v
		}
		for _, m := range modes {
			worst, wvc := math.Inf(-1), ""
			var per []string
			for _, v := range r.vcs[m] {
				if d := v.MeanWait - priv[v.VC].MeanWait; d > worst {
					worst, wvc = d, v.VC
				}
				per = append(per, fmt.Sprintf("%s %.0f (%.0f) %.3f", v.VC, v.MeanWait, v.MeanJCT, v.Speed[0]))
			}
			ok := "yes"
			if worst > *round {
				ok = "no"
			}
			if m == "private" {
				worst, wvc, ok = 0, "", ""
			}
			perText := strings.Join(per, "; ")
			if len(r.vcs[m]) > 6 {
				perText = fmt.Sprintf("%d VCs", len(r.vcs[m]))
			}
			fmt.Printf("| %s | %s | %.0f | %.0f %s | %s | %s |\n", s.name, m, r.jct[m], worst, wvc, ok, perText)
		}
	}
	fmt.Println()
	for i, s := range sets {
		r := res[i]
		if r.err != nil || len(r.vcs["private"]) <= 6 {
			continue
		}
		fmt.Printf("\n## %s per VC (mean wait s: private / hived / hived-pm / hived-speed)\n\n| VC | jobs | private | hived | hived-pm | hived-speed | speed A private / hived / hived-pm / hived-speed |\n|---|---|---|---|---|---|---|\n", s.name)
		by := map[string]map[string]experiment.VCFigures{}
		for _, m := range modes {
			for _, v := range r.vcs[m] {
				if by[v.VC] == nil {
					by[v.VC] = map[string]experiment.VCFigures{}
				}
				by[v.VC][m] = v
			}
		}
		for _, v := range r.vcs["private"] {
			b := by[v.VC]
			// The trace's jobs of the VC: any shared-cluster mode's count
			// (the private figure sums its draws' runs).
			jobs := v.Jobs / *draws
			for _, m := range modes {
				if m != "private" && b[m].Jobs > 0 {
					jobs = b[m].Jobs
					break
				}
			}
			fmt.Printf("| %s | %d | %.0f | %.0f | %.0f | %.0f | %.3f / %.3f / %.3f / %.3f |\n", v.VC, jobs, v.MeanWait, b["hived"].MeanWait, b["hived-pm"].MeanWait, b["hived-speed"].MeanWait,
				v.Speed[0], b["hived"].Speed[0], b["hived-pm"].Speed[0], b["hived-speed"].Speed[0])
		}
	}
	fmt.Println()
	for i, s := range sets {
		var parts []string
		for _, m := range modes {
			parts = append(parts, fmt.Sprintf("%s %.1f s", m, res[i].wall[m].Seconds()))
		}
		fmt.Printf("- wall, %s: %s\n", s.name, strings.Join(parts, ", "))
	}
}

// cached is a private reference kept by -cache.
type cached struct {
	VCs []experiment.VCFigures `json:"vcs"`
	JCT float64                `json:"jct"`
}

// cacheFile names a setting's private reference: everything it depends on.
func cacheFile(dir string, s setting, jobs, draws int, round float64, placement string) string {
	name := fmt.Sprintf("%s jobs %d draws %d round %g %s", s.name, jobs, draws, round, placement)
	return filepath.Join(dir, strings.NewReplacer(" ", "_", "=", "", "/", "_").Replace(name)+".json")
}

func runSetting(s setting, i int, dir, cache string, draws int, round float64, placement string) result {
	r := result{vcs: map[string][]experiment.VCFigures{}, jct: map[string]float64{}, wall: map[string]time.Duration{}}
	path := filepath.Join(dir, fmt.Sprintf("cells-%d.yaml", i))
	f, err := os.Create(path)
	if err != nil {
		r.err = err
		return r
	}
	if err := tenancy.WriteYAML(f, s.cells); err != nil {
		r.err = err
		return r
	}
	f.Close()
	var cpath string
	if cache != "" {
		cpath = cacheFile(cache, s, len(s.tr.Jobs), draws, round, placement)
		if b, err := os.ReadFile(cpath); err == nil {
			var c cached
			if err := json.Unmarshal(b, &c); err != nil {
				r.err = fmt.Errorf("%s: %w", cpath, err)
				return r
			}
			r.vcs["private"], r.jct["private"] = c.VCs, c.JCT
		}
	}
	for _, m := range modes {
		if _, done := r.vcs[m]; done {
			continue
		}
		o, err := experiment.Preset("artifact")
		if err != nil {
			r.err = err
			return r
		}
		o.Trace, o.Cells, o.Tenancy = "hivedspeed", path, m
		o.Placements, o.Round, o.Seed, o.Pinned = placement, round, s.seed, false
		if m == "private" {
			o.PrivateDraws = draws
		}
		in, err := experiment.PrepareWith(o, s.tr)
		if err != nil {
			r.err = fmt.Errorf("%s: %w", m, err)
			return r
		}
		start := time.Now()
		out, err := in.Run(placement)
		if err != nil {
			r.err = fmt.Errorf("%s: %w", m, err)
			return r
		}
		r.wall[m] = time.Since(start)
		r.vcs[m], r.jct[m] = out.VCs, out.AvgJCT
		if m == "private" && cpath != "" {
			b, err := json.Marshal(cached{out.VCs, out.AvgJCT})
			if err == nil {
				err = os.WriteFile(cpath, b, 0o644)
			}
			if err != nil {
				r.err = err
				return r
			}
		}
	}
	return r
}

func split(s string) []string {
	var out []string
	for _, x := range strings.Split(s, ",") {
		if x = strings.TrimSpace(x); x != "" {
			out = append(out, x)
		}
	}
	return out
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "hivedspeed:", err)
	os.Exit(1)
}
