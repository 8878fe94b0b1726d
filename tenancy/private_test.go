package tenancy

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// H8: with guaranteed jobs only and a deterministic intra-VC scheduler
// (strict FIFO per VC), every job starts at the same time on the shared
// cluster as with its VC alone, whatever the other VCs do.
func TestH8GuaranteedOnlyEqualsPrivate(t *testing.T) {
	rng := rand.New(rand.NewPCG(8, 8))
	type job struct {
		vc            string
		arrive, dur   int
		pods          []int
		leaf          string
		shared, alone int
	}
	compared := 0
	for c := 0; c < 300; c++ {
		cfg := randomConfig(rng)
		shared, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		var jobs []*job
		for _, vc := range shared.vcs {
			for _, vcc := range vc.chains {
				for i := 0; i < 6; i++ {
					n := 1 + rng.IntN(vcc.chain.types[vcc.chain.NodeLevel].leaves)
					jobs = append(jobs, &job{vc: vc.Name, arrive: rng.IntN(20), dur: 1 + rng.IntN(10), pods: []int{n}, leaf: vcc.chain.LeafType, shared: -1, alone: -1})
				}
			}
		}
		// run plays the jobs of the given VCs on s; start records the times.
		run := func(s *Scheduler, only string, start func(*job, int)) {
			end := map[string]int{}
			queue := map[string][]*job{}
			for tm := 0; tm < 400; tm++ {
				for name, e := range end {
					if e == tm {
						if err := s.Release(name); err != nil {
							t.Fatal(err)
						}
						delete(end, name)
					}
				}
				for i, j := range jobs {
					if j.arrive == tm && (only == "" || j.vc == only) {
						queue[j.vc] = append(queue[j.vc], jobs[i])
					}
				}
				for _, vc := range s.VCs() {
					for len(queue[vc]) > 0 {
						j := queue[vc][0]
						name := fmt.Sprintf("j%p", j)
						d, err := s.Schedule(Request{Group: name, VC: j.vc, Pods: j.pods, LeafType: j.leaf, NoPreemption: true})
						if err != nil {
							t.Fatal(err)
						}
						if !d.Placed {
							break
						}
						start(j, tm)
						end[name] = tm + j.dur
						queue[vc] = queue[vc][1:]
					}
				}
				if err := s.Check(); err != nil {
					t.Fatal(err)
				}
			}
		}
		run(shared, "", func(j *job, tm int) { j.shared = tm })
		for _, vc := range shared.VCs() {
			acfg, err := shared.AloneConfig(vc)
			if err != nil {
				t.Fatal(err)
			}
			alone, err := New(acfg)
			if err != nil {
				t.Fatal(err)
			}
			run(alone, vc, func(j *job, tm int) { j.alone = tm })
		}
		for _, j := range jobs {
			if j.shared != j.alone {
				t.Fatalf("config %d: VC %s job arriving at %d (pods %v) starts at %d shared, %d alone", c, j.vc, j.arrive, j.pods, j.shared, j.alone)
			}
			if j.shared >= 0 {
				compared++
			}
		}
	}
	if compared < 1000 {
		t.Fatalf("only %d started jobs compared", compared)
	}
	t.Logf("%d jobs start at the same time shared and alone", compared)
}

// The private cluster of a VC holds exactly its cells.
func TestPrivateConfig(t *testing.T) {
	s := mustNew(t, twoLevel(2, 4, "  A: {virtualCells: [{cellType: NODE.GPU, cellNumber: 3}]}\n  B: {virtualCells: [{cellType: NODE, cellNumber: 1}]}\n"))
	for _, vc := range []string{"A", "B"} {
		cfg, err := s.PrivateConfig(vc)
		if err != nil {
			t.Fatal(err)
		}
		p, err := New(cfg)
		if err != nil {
			t.Fatalf("%s: %v", vc, err)
		}
		if got, want := len(p.leaves), s.VCDevices(vc); got != want {
			t.Fatalf("%s: private cluster has %d devices, want %d", vc, got, want)
		}
		if p.VCDevices(vc) != s.VCDevices(vc) {
			t.Fatalf("%s: VC holds %d devices privately, %d shared", vc, p.VCDevices(vc), s.VCDevices(vc))
		}
	}
}
