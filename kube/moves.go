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

// share is the part of a gang's GPUs that one gang of the round holds
// after the plan.
type share struct {
	taker string // gangName
	gpus  []int
}

// dealt splits gpus, a gang's GPUs before the round, by who holds each
// after the plan: the other gangs of the round (by name), and the GPUs
// left free. GPUs the gang itself still holds, and any held by pods no
// gang of the round owns, are in neither. An event that named every GPU
// of the gang as going to every taker misled when several gangs split
// them or some stayed free (a 4-GPU gang preempted for a 2-GPU one read
// as if the winner took all four).
func dealt(snap *snapshot, self int, gpus []int, byID map[int]*gang) (shares []share, free []int) {
	for _, x := range slices.Sorted(slices.Values(gpus)) {
		o := snap.Cluster.Owner(x)
		switch {
		case o == cluster.Free:
			free = append(free, x)
		case o == self || byID[o] == nil:
		default:
			name := gangName(byID[o].Key)
			at := slices.IndexFunc(shares, func(s share) bool { return s.taker == name })
			if at < 0 {
				at = len(shares)
				shares = append(shares, share{taker: name})
			}
			shares[at].gpus = append(shares[at].gpus, x)
		}
	}
	slices.SortFunc(shares, func(a, b share) int { return strings.Compare(a.taker, b.taker) })
	return shares, free
}

// sharesText writes shares as "its A go to X, its B to Y and its C to
// Z" (verb "go to"; with "to": "its A to X, ..."), the devices as a
// person reads them; its is how the GPUs are owned ("its", or "its old"
// for a migrated gang's).
func sharesText(snap *snapshot, shares []share, verb, its string) string {
	var parts []string
	for i, sh := range shares {
		v := " to "
		if i == 0 {
			v = " " + verb + " "
			if verb == "go to" && len(sh.gpus) == 1 {
				v = " goes to "
			}
		}
		parts = append(parts, its+" "+snap.Devices(sh.gpus)+v+sh.taker)
	}
	switch len(parts) {
	case 0:
		return ""
	case 1:
		return parts[0]
	}
	return strings.Join(parts[:len(parts)-1], ", ") + " and " + parts[len(parts)-1]
}

// freeText is "; its F stay free" for GPUs free, or "".
func freeText(snap *snapshot, free []int, its string) string {
	if len(free) == 0 {
		return ""
	}
	verb := " stay free"
	if len(free) == 1 {
		verb = " stays free"
	}
	return "; " + its + " " + snap.Devices(free) + verb
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
	shares, free := dealt(snap, d.Job.ID, d.From, byID)
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
			by := ""
			if s.plan.tiered && s.th == nil {
				if g := byID[d.Job.ID]; g != nil {
					p, _ := gangPriority(g)
					by = fmt.Sprintf(" (by pod priority first, its own %d, then by %s)", p, sched)
				}
			}
			return fmt.Sprintf("%s: %s, ordered ahead of it%s%s", at, sharesText(snap, shares, "go to", "its"), by, freeText(snap, free, "its"))
		default:
			gave := sharesText(snap, shares, "to", "its")
			and := " and"
			if len(shares) > 1 {
				and = ", and"
			}
			return fmt.Sprintf("%s: the %s placement re-planned the round, gave %s%s left no GPUs for it%s",
				at, place, gave, and, freeText(snap, free, "its"))
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
		switch {
		case len(shares) == 1 && len(free) == 0 && len(shares[0].gpus) == len(d.From):
			why += "; its old GPUs go to " + shares[0].taker
		case len(shares) > 0:
			why += "; " + sharesText(snap, shares, "go to", "its old") + freeText(snap, free, "its old")
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
// refuse it, in whole or in part, or the API server's refusal of it
// within its backoff (see refusedEvictions; budget true for both: no
// config lets the round evict it).
func (s *Scheduler) keptBy(g *gang) (why string, budget bool) {
	// The budgets first: what an eviction would lose, a config may
	// accept (preemptBarePods), what a budget refuses no config can.
	if b := s.budgets.blocks(g.Bound); b != "" {
		return b, true
	}
	if r := s.refusedEv.blocks(g.Bound, s.lastRound); r != "" {
		return r, true
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
