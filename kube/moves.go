package kube

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/tenancy"
	"github.com/palsched/pal/workload"
)

// What an eviction means depends on who owns the pod. A pod with a
// controller ownerReference (a batch/v1 Job's, a StatefulSet's, a
// ReplicaSet's, a replay's) is recreated by its controller, and the new
// pods queue again as the same gang. A bare pod (no controller) is
// deleted and nothing recreates it: its work is lost. So a gang with a
// bare pod is never evicted to migrate it, and evicted to preempt it only
// when the config's preemptBarePods says so; the same holds for a gang
// whose eviction would fail its Job (jobs.go).

// neverMoves is the migration cost of a job that must not migrate: no
// expected gain reaches it, so a migration-aware placement keeps the job
// where it is.
const neverMoves = math.MaxFloat64

// gangName is how messages name a gang: "gang ns/name" for pods that
// share pal.io/gang, "Job ns/name" for a batch/v1 Job's pods, "PodGroup
// ns/name" for a PodGroup's (with "(scheduling.x-k8s.io)" for
// scheduler-plugins'), "pod ns/name" for a pod alone.
func gangName(key string) string {
	ns, name, ok := strings.Cut(key, "/")
	if !ok {
		return key
	}
	if g := podspec.KeyGroupName(ns, name); g != "" {
		return g
	}
	switch {
	case strings.HasPrefix(name, "job:"):
		return "Job " + ns + "/" + strings.TrimPrefix(name, "job:")
	case strings.HasPrefix(name, "pod:"):
		return "pod " + ns + "/" + strings.TrimPrefix(name, "pod:")
	}
	return "gang " + key
}

// takers lists, as gang names, the gangs of the round that hold some of
// gpus after the plan, and whether every one of them is ahead of index at
// in the round's order.
func takers(snap *snapshot, self *workload.Job, gpus []int, byID map[int]*gang, pos map[int]int, at int) ([]string, bool) {
	var names []string
	ahead := true
	seen := map[int]bool{}
	for _, x := range gpus {
		o := snap.Cluster.Owner(x)
		if o == cluster.Free || o == self.ID || seen[o] {
			continue
		}
		seen[o] = true
		g := byID[o]
		if g == nil {
			continue
		}
		names = append(names, gangName(g.Key))
		if p, ok := pos[o]; !ok || p > at {
			ahead = false
		}
	}
	slices.Sort(names)
	return names, ahead
}

// cellsTakers names the gangs that HiveD's stateful preemption evicts
// job for: each holds cells job runs on and binds once job is gone.
func (s *Scheduler) cellsTakers(job *workload.Job, byID map[int]*gang) []string {
	if s.ten == nil || s.ten.hived == nil {
		return nil
	}
	var out []string
	self := strconv.Itoa(job.ID)
	for pre, victims := range s.ten.hived.Cells().Preempting() {
		if !slices.Contains(victims, self) {
			continue
		}
		if id, err := strconv.Atoi(pre); err == nil && byID[id] != nil {
			out = append(out, gangName(byID[id].Key))
		}
	}
	slices.Sort(out)
	return out
}

// reason says why a round preempts or migrates a gang, naming gangs and
// devices as a person reads them, and the true cause: the scheduling
// order (a job ahead takes the GPUs) or the placement's re-plan.
func (s *Scheduler) reason(snap *snapshot, d round.Decision, byID map[int]*gang, pos map[int]int) string {
	who, ahead := takers(snap, d.Job, d.From, byID, pos, d.Index)
	sched, place := s.pol.sched.Name(), s.pol.place.Name()
	switch d.Kind {
	case round.Preempt:
		at := fmt.Sprintf("preempted at queue position %d under %s", d.Index+1, sched)
		switch {
		case len(who) == 0:
			if pre := s.cellsTakers(d.Job, byID); len(pre) > 0 {
				how := "it ran as opportunistic"
				if d.Job.VCPriority != tenancy.Opportunistic {
					how = "it ran lazily preempted, outside its VC's cells"
				}
				return fmt.Sprintf("%s: %s on the cells that %s (guaranteed) needs; it binds once this gang's pods are gone", at, how, strings.Join(pre, ", "))
			}
			return fmt.Sprintf("%s: the %s placement left it out of the round's plan", at, place)
		case ahead:
			return fmt.Sprintf("%s: its %s go to %s, ordered ahead of it", at, snap.Devices(d.From), strings.Join(who, ", "))
		default:
			return fmt.Sprintf("%s: the %s placement re-planned the round, gave its %s to %s and left no GPUs for it",
				at, place, snap.Devices(d.From), strings.Join(who, ", "))
		}
	case round.Migrate:
		old, nw := s.slowdown(snap, d.Job, d.From), s.slowdown(snap, d.Job, d.To)
		why := fmt.Sprintf("migrated by the %s placement from %s to %s (expected slowdown %s on the old GPUs, %s on the new)",
			place, snap.Devices(d.From), snap.Devices(d.To), fmtFloat(old), fmtFloat(nw))
		if c := d.Job.MoveCost.Migration; strings.HasSuffix(place, "-ma") && c > 0 && c < neverMoves {
			why += fmt.Sprintf(", a move it weighed against a migration cost of %s s", fmtFloat(c))
			if g := byID[d.Job.ID]; g != nil && g.JobPods > 0 {
				b := JobBackoff(g.JobPods).Seconds() * s.cfg.TimeScale
				why += fmt.Sprintf(" (migrationCost %s s, and %s s of the Job controller's backoff before it recreates %d pods)",
					fmtFloat(c-b), fmtFloat(b), g.JobPods)
			}
		}
		if len(who) > 0 {
			why += "; its old GPUs go to " + strings.Join(who, ", ")
		}
		return why
	}
	return d.Reason
}

// movable says whether a decision may evict the gang: only gangs whose
// eviction loses nothing and that no budget keeps (see keptBy) may
// migrate; one that would lose work may be preempted only when the config
// allows it, and one a budget keeps not at all.
func (s *Scheduler) movable(g *gang, k round.Kind) bool {
	why, budget := s.keptBy(g)
	if why == "" {
		return true
	}
	return !budget && k == round.Preempt && s.cfg.PreemptBarePods
}

// keptBy says why gang g may not be evicted, or "": what its eviction
// would lose for good (loses), or the PodDisruptionBudgets that would
// refuse it, in whole or in part (budget true: no config lets the round
// evict it).
func (s *Scheduler) keptBy(g *gang) (why string, budget bool) {
	// The budgets first: what an eviction would lose, a config may
	// accept (preemptBarePods), what a budget refuses no config can.
	if b := s.budgets.blocks(g.Bound); b != "" {
		return b, true
	}
	return s.loses(g), false
}

// loses says what evicting gang g would lose for good, or "": its bare
// pods, which nothing recreates, or the batch/v1 Jobs the eviction would
// fail (jobsAtRisk).
func (s *Scheduler) loses(g *gang) string {
	if bare := g.BarePods(); len(bare) > 0 {
		return fmt.Sprintf("its bare pods %s would be deleted and nothing would recreate them", strings.Join(bare, ", "))
	}
	if g.JobPods == 0 || !s.tight.holds(g.Bound) {
		return ""
	}
	return strings.Join(s.jobsAtRisk(g.Bound), "; ")
}
