package paper

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"

	"github.com/palsched/pal/policy/tenant"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// SynthTenant is one tenant of a synthetic HiveD setup: its node cells,
// the GPUs of its jobs and their mean run time. A job of more than a node
// (SynthNodeGPUs) is pods of a whole node each.
type SynthTenant struct {
	Name    string
	Nodes   int
	JobGPUs int       // every job's GPUs, when Mix is empty
	Mix     []JobSize // the jobs' sizes and their shares
	MeanRun float64   // seconds
}

// JobSize is one job size of a tenant's mix and its share of the jobs.
type JobSize struct {
	GPUs  int
	Share float64
}

// SynthTenants is the paper's 96-GPU setup as we first read it: 12 nodes
// of 8 GPUs, one tenant of 4 nodes running whole-node 8-GPU jobs (mean
// 2 h) and two tenants of 4 nodes running 1-GPU jobs (mean 1 h).
var SynthTenants = []SynthTenant{
	{Name: "whole-node", Nodes: 4, JobGPUs: 8, MeanRun: 7200},
	{Name: "one-gpu-a", Nodes: 4, JobGPUs: 1, MeanRun: 3600},
	{Name: "one-gpu-b", Nodes: 4, JobGPUs: 1, MeanRun: 3600},
}

// MixedTenants is the same cluster with the two things the paper's
// workload has that SynthTenants lacks: a mix of job sizes inside the
// small tenants (1, 2 and 4 GPUs), and jobs of more than one node for the
// large one (16 GPUs, two whole nodes, beside 8-GPU jobs). The shares are
// a guess in the spirit of production traces (mostly small jobs), not the
// paper's (whose trace is not public).
var MixedTenants = []SynthTenant{
	{Name: "large", Nodes: 4, Mix: []JobSize{{8, 0.6}, {16, 0.4}}, MeanRun: 7200},
	{Name: "mixed-a", Nodes: 4, Mix: []JobSize{{1, 0.5}, {2, 0.25}, {4, 0.25}}, MeanRun: 3600},
	{Name: "mixed-b", Nodes: 4, Mix: []JobSize{{1, 0.5}, {2, 0.25}, {4, 0.25}}, MeanRun: 3600},
}

// SynthNodeGPUs is the synthetic cluster's node size.
const SynthNodeGPUs = 8

// SyntheticHived draws the synthetic workload of SynthTenants.
func SyntheticHived(load, days float64, seed uint64) (*tenancy.Config, *workload.Trace) {
	return SyntheticTenants(SynthTenants, "synthetic-96", load, days, seed)
}

// SyntheticTenants draws a synthetic workload: for each tenant, Poisson
// arrivals over days days at load L of its quota (rate L x quota / (mean
// job GPUs x mean run time)), exponential run times, and with a mix a
// size per job drawn by share. Each tenant draws from its own stream of
// seed, so changing one tenant's parameters never shifts another's jobs
// (and a tenant without a mix draws exactly what it did before mixes
// existed). Jobs are numbered in arrival order (ties by tenant order);
// every job is guaranteed (priority 0). The cells are DGX-like 8-GPU nodes
// (PCIe pairs and sockets inside), each tenant a VC of its nodes as node
// cells.
func SyntheticTenants(tenants []SynthTenant, name string, load, days float64, seed uint64) (*tenancy.Config, *workload.Trace) {
	cfg := &tenancy.Config{File: fmt.Sprintf("synthetic 96-GPU cells (12 nodes x 8 GPUs; VCs %s)", TenantsText(tenants))}
	for _, t := range tenants {
		tenant.AddNodeVC(cfg, t.Name, t.Nodes)
	}
	name = fmt.Sprintf("%s (load %.2f, %g days, seed %d)", name, load, days, seed)
	tr := &workload.Trace{Name: name}
	horizon := days * 86400
	for k, t := range tenants {
		rng := rand.New(rand.NewPCG(seed, uint64(0x73796e00+k)))
		mean := float64(t.JobGPUs)
		if len(t.Mix) > 0 {
			mean = 0
			for _, m := range t.Mix {
				mean += float64(m.GPUs) * m.Share
			}
		}
		rate := load * float64(t.Nodes*SynthNodeGPUs) / (mean * t.MeanRun) // jobs per second
		for at := rng.ExpFloat64() / rate; at < horizon; at += rng.ExpFloat64() / rate {
			run := math.Max(1, math.Round(rng.ExpFloat64()*t.MeanRun))
			gpus := t.JobGPUs
			if len(t.Mix) > 0 {
				gpus = t.Mix[len(t.Mix)-1].GPUs
				u := rng.Float64()
				for _, m := range t.Mix {
					if u < m.Share {
						gpus = m.GPUs
						break
					}
					u -= m.Share
				}
			}
			tr.Jobs = append(tr.Jobs, workload.Spec{GPUs: gpus, PodGPUs: min(gpus, SynthNodeGPUs), Submit: math.Round(at), Iterations: run, IterTime: 1,
				Model: workload.NoModel, Tracked: true, VC: t.Name, Source: name})
		}
	}
	rank := map[string]int{}
	for k, t := range tenants {
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

// SynthVCs describes SynthTenants for a report's inputs.
func SynthVCs() string { return TenantsText(SynthTenants) }

// TenantsText describes tenants for the report's inputs.
func TenantsText(tenants []SynthTenant) string {
	var parts []string
	for _, t := range tenants {
		if len(t.Mix) == 0 {
			parts = append(parts, fmt.Sprintf("%s %d nodes of %d-GPU jobs", t.Name, t.Nodes, t.JobGPUs))
			continue
		}
		var mix []string
		for _, m := range t.Mix {
			mix = append(mix, fmt.Sprintf("%d-GPU %.0f%%", m.GPUs, 100*m.Share))
		}
		parts = append(parts, fmt.Sprintf("%s %d nodes of jobs %s", t.Name, t.Nodes, strings.Join(mix, ", ")))
	}
	return strings.Join(parts, ", ")
}
