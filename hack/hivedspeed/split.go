package main

import (
	"fmt"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"

	"github.com/palsched/pal/experiment"
	"github.com/palsched/pal/tenancy"
)

// splitBound (-split-bound) bounds what any hived-speed bind rule can
// reach on a synthetic setting that is overloaded: there the one-GPU
// tenants bind their nodes in the first minutes and keep them all week,
// so a run's outcome is its static split of the 12 nodes among the three
// VCs. It scores every split by a throughput proxy (a one-GPU tenant: the
// sum of 1/value over its GPUs; the whole-node tenant: 8 over each node's
// slowest value) against each VC's private draws, made exactly as
// --private-draws makes them, and against the VC's expected draw (the
// mean over every four-node set), and prints the best split by each and
// the standard error of the draws' mean. The proxy predicted every VC's
// pass or fail at L = 1.1 in docs/measurements/hived-speed-overload-
// 2026-12-04.txt; with check, the splits recorded there are scored first.
func splitBound(s setting, draws int, dir string, check bool) {
	seed := s.seed
	path := filepath.Join(dir, "split-cells.yaml")
	f, err := os.Create(path)
	if err != nil {
		fail(err)
	}
	if err := tenancy.WriteYAML(f, s.cells); err != nil {
		fail(err)
	}
	f.Close()
	o, err := experiment.Preset("artifact")
	if err != nil {
		fail(err)
	}
	o.Trace, o.Cells, o.Tenancy = "hivedspeed", path, "private"
	o.Placements, o.Round, o.Seed, o.Pinned, o.PrivateDraws = "spread", 60, seed, false, draws
	in, err := experiment.PrepareWith(o, s.tr)
	if err != nil {
		fail(err)
	}
	probe, err := tenancy.New(in.Layout.Cells)
	if err != nil {
		fail(err)
	}
	nodes := probe.Nodes()
	idx := map[string]int{}
	vals := make([][]float64, len(nodes)) // class A values per node
	for i, n := range nodes {
		idx[n.Name] = i
		for _, d := range n.Devices {
			g, _ := in.Layout.GPU(n.Name, d)
			vals[i] = append(vals[i], in.Raw.Values[0][g])
		}
	}
	vcs := in.Layout.VCs()
	proxy := func(vc string, set []int) float64 {
		s := 0.0
		for _, n := range set {
			if vc == "whole-node" {
				s += float64(len(vals[n])) / slices.Max(vals[n])
			} else {
				for _, v := range vals[n] {
					s += 1 / v
				}
			}
		}
		return s
	}
	ref := map[string]float64{}
	exp := map[string]float64{}
	se := map[string]float64{} // standard error of an 8-draw mean, relative
	for _, vc := range vcs {
		h := fnv.New64a()
		h.Write([]byte("private-draws/" + vc))
		rng := rand.New(rand.NewPCG(seed, h.Sum64()))
		sum := 0.0
		for range draws {
			leaves, err := probe.PrivateDraw(vc, rng)
			if err != nil {
				fail(err)
			}
			var set []int
			for _, l := range leaves {
				if k := idx[l.Node]; !slices.Contains(set, k) {
					set = append(set, k)
				}
			}
			sum += proxy(vc, set)
		}
		ref[vc] = sum / float64(draws)
		// expectation over every 4-node set
		n, tot, sq := 0, 0.0, 0.0
		forSubsets(len(nodes), 4, nil, func(s []int) { p := proxy(vc, s); tot += p; sq += p * p; n++ })
		exp[vc] = tot / float64(n)
		se[vc] = math.Sqrt(sq/float64(n)-exp[vc]*exp[vc]) / math.Sqrt(float64(draws)) / exp[vc]
	}
	// best partition by min margin over draws, and by min margin over expectation
	bestD, bestE := math.Inf(-1), math.Inf(-1)
	var partD, partE [3][]int
	var marginsOfE [3]float64
	all := make([]int, len(nodes))
	for i := range all {
		all[i] = i
	}
	forSubsets(12, 4, nil, func(a []int) {
		rest := without(all, a)
		forSubsetsOf(rest, 4, nil, func(b []int) {
			c := without(rest, b)
			sets := [3][]int{slices.Clone(a), slices.Clone(b), c}
			mD, mE := math.Inf(1), math.Inf(1)
			var mm [3]float64
			for k, vc := range vcs {
				p := proxy(vc, sets[k])
				mD = min(mD, p/ref[vc]-1)
				mE = min(mE, p/exp[vc]-1)
				mm[k] = p/ref[vc] - 1
			}
			if mD > bestD {
				bestD, partD = mD, sets
			}
			if mE > bestE {
				bestE, partE, marginsOfE = mE, sets, mm
			}
		})
	})
	if rec, ok := recorded[seed]; ok && check {
		fmt.Printf("%s, the splits recorded on 2026-12-04:", s.name)
		for k, vc := range vcs {
			fmt.Printf(" %s %v %+.2f%%", vc, rec[k], 100*(proxy(vc, rec[k])/ref[vc]-1))
		}
		fmt.Println()
	}
	fmt.Printf("%s: VCs %v; draws' mean vs expectation: ", s.name, vcs)
	for _, vc := range vcs {
		fmt.Printf("%s %+.2f%% (se %.2f%%) ", vc, 100*(ref[vc]/exp[vc]-1), 100*se[vc])
	}
	fmt.Printf("\n  best vs draws: min margin %+.2f%% %v\n  best vs expectation: min margin %+.2f%% %v; its margins vs draws %+.2f%% %+.2f%% %+.2f%%\n",
		100*bestD, partD, 100*bestE, partE, 100*marginsOfE[0], 100*marginsOfE[1], 100*marginsOfE[2])
}

// recorded is the split hived-speed bound on four seeds, by VC in config
// order (whole-node, one-gpu-a, one-gpu-b), from the 2026-12-04 record.
var recorded = map[uint64][3][]int{
	1: {{2, 3, 6, 11}, {5, 7, 8, 9}, {0, 1, 4, 10}},
	2: {{0, 3, 5, 10}, {1, 2, 4, 6}, {7, 8, 9, 11}},
	4: {{1, 2, 5, 11}, {6, 8, 9, 10}, {0, 3, 4, 7}},
	7: {{1, 6, 8, 10}, {0, 5, 7, 9}, {2, 3, 4, 11}},
}

// forSubsets calls f with every k-subset of 0..n-1, ascending, after pre.
func forSubsets(n, k int, pre []int, f func([]int)) {
	all := make([]int, n)
	for i := range all {
		all[i] = i
	}
	forSubsetsOf(all, k, pre, f)
}

// forSubsetsOf calls f with every k-subset of from, after pre.
func forSubsetsOf(from []int, k int, pre []int, f func([]int)) {
	if k == 0 {
		f(pre)
		return
	}
	for i := 0; i <= len(from)-k; i++ {
		forSubsetsOf(from[i+1:], k-1, append(pre, from[i]), f)
	}
}

// without is all less the members of a.
func without(all, a []int) []int {
	var out []int
	for _, x := range all {
		if !slices.Contains(a, x) {
			out = append(out, x)
		}
	}
	return out
}
