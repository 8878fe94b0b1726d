package hived

import (
	"cmp"
	"fmt"
	"github.com/palsched/pal/policy/tenant"
	"math"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// SynthTenant is one tenant of the synthetic HiveD setup: its node cells,
// the GPUs of each of its jobs (one pod) and their mean run time.
type SynthTenant struct {
	Name    string
	Nodes   int
	JobGPUs int
	MeanRun float64 // seconds
}

// SynthTenants is the paper's 96-GPU setup as we read it: 12 nodes of 8
// GPUs, one tenant of 4 nodes running whole-node 8-GPU jobs (mean 2 h)
// and two tenants of 4 nodes running 1-GPU jobs (mean 1 h).
var SynthTenants = []SynthTenant{
	{"whole-node", 4, 8, 7200},
	{"one-gpu-a", 4, 1, 3600},
	{"one-gpu-b", 4, 1, 3600},
}

// SynthNodeGPUs is the synthetic cluster's node size.
const SynthNodeGPUs = 8

// SyntheticHived draws the synthetic workload: for each tenant, Poisson
// arrivals over days days at load L of its quota (rate L x quota /
// (job GPUs x mean run time)), exponential run times. Each tenant draws
// from its own stream of seed, so changing one tenant's parameters never
// shifts another's jobs. Jobs are numbered in arrival order (ties by
// tenant order); every job is guaranteed (priority 0). The cells are
// DGX-like 8-GPU nodes (PCIe pairs and sockets inside), each tenant a VC
// of its nodes as node cells.
func SyntheticHived(load, days float64, seed uint64) (*tenancy.Config, *workload.Trace) {
	cfg := &tenancy.Config{File: fmt.Sprintf("synthetic 96-GPU cells (12 nodes x 8 GPUs; VCs %s)", synthVCs())}
	for _, t := range SynthTenants {
		tenant.AddNodeVC(cfg, t.Name, t.Nodes)
	}
	name := fmt.Sprintf("synthetic-96 (load %.2f, %g days, seed %d)", load, days, seed)
	tr := &workload.Trace{Name: name}
	horizon := days * 86400
	for k, t := range SynthTenants {
		rng := rand.New(rand.NewPCG(seed, uint64(0x73796e00+k)))
		rate := load * float64(t.Nodes*SynthNodeGPUs) / (float64(t.JobGPUs) * t.MeanRun) // jobs per second
		for at := rng.ExpFloat64() / rate; at < horizon; at += rng.ExpFloat64() / rate {
			run := math.Max(1, math.Round(rng.ExpFloat64()*t.MeanRun))
			tr.Jobs = append(tr.Jobs, workload.Spec{GPUs: t.JobGPUs, PodGPUs: t.JobGPUs, Submit: math.Round(at), Iterations: run, IterTime: 1,
				Model: workload.NoModel, Tracked: true, VC: t.Name, Source: name})
		}
	}
	rank := map[string]int{}
	for k, t := range SynthTenants {
		rank[t.Name] = k
	}
	slices.SortStableFunc(tr.Jobs, func(a, b workload.Spec) int {
		if c := cmp.Compare(a.Submit, b.Submit); c != 0 {
			return c
		}
		return rank[a.VC] - rank[b.VC]
	})
	for i := range tr.Jobs {
		tr.Jobs[i].ID = i
		tr.Jobs[i].Line = i + 1
	}
	return cfg, tr
}

func synthVCs() string {
	s := ""
	for i, t := range SynthTenants {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%s %d nodes of %d-GPU jobs", t.Name, t.Nodes, t.JobGPUs)
	}
	return s
}
