package bench

import (
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/palsched/pal/tenancy"
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
// Schedule call (one gang's tenancy decision: intra-VC placement, binding
// and buddy allocation, commit).
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
// random group ends (untimed), so the load stays steady.
func TenancyDecision(opts TenancyOptions) (TenancyStats, error) {
	cfg, err := TenancyConfig(opts.Nodes, opts.NodesPerRack, opts.VCs)
	if err != nil {
		return TenancyStats{}, err
	}
	s, err := tenancy.New(cfg)
	if err != nil {
		return TenancyStats{}, err
	}
	reps := opts.Reps
	if reps <= 0 {
		reps = 2000
	}
	rng := rand.New(rand.NewPCG(opts.Seed, 0x7e4a))
	vcs := s.VCs()
	var live []string
	seq := 0
	next := func() tenancy.Request {
		seq++
		return tenancy.Request{Group: fmt.Sprintf("g%d", seq), VC: vcs[rng.IntN(len(vcs))], Pods: gangShapes[rng.IntN(len(gangShapes))], NoPreemption: true}
	}
	// Load: keep asking until half the devices are in use.
	used, target := 0, opts.Nodes*8/2
	for tries := 0; used < target && tries < 100*opts.Nodes; tries++ {
		r := next()
		d, err := s.Schedule(r)
		if err != nil {
			return TenancyStats{}, err
		}
		if d.Placed {
			live = append(live, r.Group)
			for _, p := range r.Pods {
				used += p
			}
		}
	}
	st := TenancyStats{Reps: reps, GPUs: opts.Nodes * 8, VCs: len(vcs), Live: len(live)}
	us := make([]float64, reps)
	for i := range us {
		r := next()
		start := time.Now()
		d, err := s.Schedule(r)
		us[i] = micros(time.Since(start))
		if err != nil {
			return TenancyStats{}, err
		}
		if d.Placed {
			st.Placed++
			live = append(live, r.Group)
		}
		k := rng.IntN(len(live))
		if err := s.Release(live[k]); err != nil {
			return TenancyStats{}, err
		}
		live[k] = live[len(live)-1]
		live = live[:len(live)-1]
	}
	st.MedianUS, st.P99US, st.MeanUS = timeSummary(us)
	return st, nil
}
