package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/policy/place"
	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// TenancyOptions shapes the tenancy benchmark: a cluster of Nodes 8-GPU
// nodes (PCIe pairs and sockets inside, racks of NodesPerRack nodes) shared
// by VCs tenants.
type TenancyOptions struct {
	Nodes, NodesPerRack, VCs int
	Reps                     int
	Seed                     uint64
}

// TenancyStats summarises the timed decisions, in microseconds per
// decision (one gang's tenancy decision: the VC's placer on its view,
// binding by buddy allocation, commit).
type TenancyStats struct {
	MedianUS, P99US, MeanUS float64
	Reps, GPUs, VCs, Placed int
	Live                    int // groups holding devices while timing (the load)
}

// TenancyConfig builds the benchmark's cells: each VC gets an equal share
// of whole racks, then of the remaining nodes, then of the remaining GPUs.
func TenancyConfig(nodes, perRack, vcs int) (*tenancy.Config, error) {
	if nodes <= 0 || perRack <= 0 || vcs <= 0 || nodes%perRack != 0 {
		return nil, fmt.Errorf("bench: want a positive number of racks of %d nodes and VCs, got %d nodes, %d VCs", perRack, nodes, vcs)
	}
	if nodes*8 > tenancy.MaxDevices {
		return nil, fmt.Errorf("bench: %d nodes exceed %d devices", nodes, tenancy.MaxDevices)
	}
	cfg := &tenancy.Config{File: fmt.Sprintf("bench %d nodes x 8 GPUs, racks of %d, %d VCs", nodes, perRack, vcs)}
	cfg.CellTypes = []tenancy.CellTypeSpec{
		{Name: "PCIE", ChildCellType: "GPU", ChildCellNumber: 2},
		{Name: "SOCKET", ChildCellType: "PCIE", ChildCellNumber: 2},
		{Name: "NODE", ChildCellType: "SOCKET", ChildCellNumber: 2, IsNodeLevel: true},
		{Name: "RACK", ChildCellType: "NODE", ChildCellNumber: perRack},
	}
	racks := nodes / perRack
	for r := 0; r < racks; r++ {
		rack := tenancy.PhysicalCellSpec{CellType: "RACK"}
		for n := 0; n < perRack; n++ {
			rack.Children = append(rack.Children, tenancy.PhysicalCellSpec{CellAddress: fmt.Sprintf("node-%d", r*perRack+n)})
		}
		cfg.PhysicalCells = append(cfg.PhysicalCells, rack)
	}
	rackEach := racks / vcs
	nodeEach := (racks - rackEach*vcs) * perRack / vcs
	gpuEach := (nodes - rackEach*vcs*perRack - nodeEach*vcs) * 8 / vcs
	for v := 0; v < vcs; v++ {
		spec := tenancy.VCSpec{Name: fmt.Sprintf("vc%d", v)}
		for _, c := range []struct {
			path string
			n    int
		}{{"RACK", rackEach}, {"RACK.NODE", nodeEach}, {"RACK.NODE.SOCKET.PCIE.GPU", gpuEach}} {
			if c.n > 0 {
				spec.VirtualCells = append(spec.VirtualCells, tenancy.VirtualCellSpec{CellType: c.path, CellNumber: c.n})
			}
		}
		cfg.VCs = append(cfg.VCs, spec)
	}
	return cfg, nil
}

// gangShapes are the gangs the benchmark asks for: 1, 2, 4 and 8 GPUs in
// one pod, and 2 or 4 whole nodes.
var gangShapes = [][]int{{1}, {1}, {2}, {4}, {8}, {8, 8}, {8, 8, 8, 8}}

// TenancyDecision loads the cluster to about half of every VC's cells and
// then times opts.Reps gang decisions of random VCs; after each, one
// random group ends (untimed), so the load stays steady. A decision is
// the whole two-layer path of one round in which one gang waits: the HiveD
// stage runs the VC's placer (packed-sticky, Tiresias' placement) on the
// VC's view with the VC's running gangs, then binds the chosen virtual
// GPUs by buddy allocation and commits them.
func TenancyDecision(opts TenancyOptions) (TenancyStats, error) {
	l, h, err := tenancyHiveD(opts.Nodes, opts.NodesPerRack, opts.VCs)
	if err != nil {
		return TenancyStats{}, err
	}
	reps := opts.Reps
	if reps <= 0 {
		reps = 2000
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x7e4a))
	env := &policy.Env{Cluster: l.Cluster, Rand: rand.New(rand.NewPCG(opts.Seed, 0x706c))}
	vcs := l.VCs()
	live := map[string][]*workload.Job{}
	var all []*workload.Job
	seq := 0
	used := 0
	// decide asks for one random gang of a random VC and applies the
	// answer to the jobs, as a driver would.
	decide := func() (placed bool, us float64) {
		seq++
		vc := vcs[rng.IntN(len(vcs))]
		shape := gangShapes[rng.IntN(len(gangShapes))]
		n := 0
		for _, p := range shape {
			n += p
		}
		j := workload.NewJob(workload.Spec{ID: seq, GPUs: n, PodGPUs: shape[0], VC: vc, Iterations: 1, IterTime: 1, Model: workload.NoModel})
		order := append(live[vc][:len(live[vc]):len(live[vc])], j)
		start := time.Now()
		out := h.Place(env, order, nil)
		us = micros(time.Since(start))
		for i, x := range order {
			x.GPUsHeld = out[i]
		}
		if out[len(order)-1] == nil {
			return false, us
		}
		live[vc] = order
		all = append(all, j)
		used += n
		return true, us
	}
	end := func() {
		k := rng.IntN(len(all))
		j := all[k]
		h.Finish(j)
		used -= len(j.GPUsHeld)
		j.GPUsHeld = nil
		all[k] = all[len(all)-1]
		all = all[:len(all)-1]
		vl := live[j.VC]
		for i, x := range vl {
			if x == j {
				live[j.VC] = append(vl[:i:i], vl[i+1:]...)
				break
			}
		}
	}
	// Load: keep asking until half the devices are in use.
	target := opts.Nodes * 8 / 2
	for tries := 0; used < target && tries < 100*opts.Nodes; tries++ {
		decide()
	}
	st := TenancyStats{Reps: reps, GPUs: opts.Nodes * 8, VCs: len(vcs), Live: len(all)}
	us := make([]float64, reps)
	for i := range us {
		placed, t := decide()
		us[i] = t
		if placed {
			st.Placed++
		}
		if len(all) > 0 {
			end()
		}
	}
	if err := h.Check(); err != nil {
		return TenancyStats{}, fmt.Errorf("bench: %w", err)
	}
	st.MedianUS, st.P99US, st.MeanUS = timeSummary(us)
	return st, nil
}

// tenancyHiveD is the benchmark's cluster and its HiveD stage: nodes of 8
// GPUs, nodesPerRack to a rack, vcs VCs, packed-sticky (with the pod
// guard) inside each VC.
func tenancyHiveD(nodes, nodesPerRack, vcs int) (*tenant.Layout, *tenant.HiveD, error) {
	cfg, err := TenancyConfig(nodes, nodesPerRack, vcs)
	if err != nil {
		return nil, nil, err
	}
	l, err := tenant.NewLayout(cfg)
	if err != nil {
		return nil, nil, err
	}
	h, err := tenant.NewHiveD(l)
	if err != nil {
		return nil, nil, err
	}
	h.SetIntraVC(&tenant.IntraVC{NewPlacer: func() (policy.Placer, error) {
		p, err := place.New("packed-sticky")
		return place.PodGuard{Placer: p}, err
	}})
	return l, h, nil
}
