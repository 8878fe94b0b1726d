package state

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/palsched/pal/kube/podspec"
	"github.com/palsched/pal/workload"
)

// GangState is where a gang stands at the start of a round.
type GangState int

const (
	GangQueued  GangState = iota // every member exists, none bound: ordered and placed
	GangRunning                  // every member bound: ordered (the placer may keep, move or preempt it)
	GangPartial                  // some members bound: a crash cut its binding off; completed from bind-info
	GangWaiting                  // not every member exists yet, or the gang can never fit: not placed, says why
	GangLeaving                  // a member finished, failed or is being deleted: holds its GPUs, not placed
)

// Gang is the pods of one job as the Store sees them. The round reads
// it; only the Store changes it (its Job is the round's to update).
type Gang struct {
	Key      string
	Spec     podspec.Spec
	Pending  []*corev1.Pod // unbound, not deleting, sorted by name
	Bound    []*corev1.Pod // bound and not finished, sorted by name
	Finished []string      // names of members that succeeded or failed, sorted
	State    GangState
	Why      string // for GangWaiting: the event message
	Failed   int    // how many of Finished failed (a PodGroup's status counts them)
	Job      *workload.Job
	GPUs     []int // global GPU ids the bound members hold, ascending
	// JobPods is, for a gang whose bound pods a batch/v1 Job owns, the
	// most of them one Job owns (0: none): evicting the gang fails that
	// many pods of one Job, which sets the Job controller's backoff.
	JobPods int
	// Gen is the Store generation that last changed the gang.
	Gen uint64

	members map[string]*podEntry // by pod name
	bare    int                  // bound bare pods
	// tols counts its pending pods' tolerations: the one part of a pod's
	// spec that decides where it may go and that an update may change
	// (only by adding one), so a gang given a toleration is placed again.
	tols int
}

// Bare is how many of the gang's bound pods are bare (no controller
// would recreate them).
func (g *Gang) Bare() int { return g.bare }

// gangSig is what of a gang a placement reads, but its GPUs.
type gangSig struct {
	state                GangState
	pending, bound, jobs int
	bare, tols           int
	gpus, size, class    int
	iters, iterTime      float64
}

func (g *Gang) sig() gangSig {
	return gangSig{g.State, len(g.Pending), len(g.Bound), g.JobPods, g.bare, g.tols,
		g.Spec.GPUs, g.Spec.Size, int(g.Spec.Class), g.Spec.Iters, g.Spec.IterTime}
}

// owner is the owner id of the gang's GPUs in the owner table.
func (g *Gang) owner() int {
	if g.State == GangLeaving || g.State == GangWaiting || g.Job == nil {
		return OwnerLeaving
	}
	return g.Job.ID
}

// BarePods names the gang's bound bare pods (no controller would
// recreate them) as namespace/name.
func (g *Gang) BarePods() []string {
	if g.bare == 0 {
		return nil
	}
	var out []string
	for _, p := range g.Bound {
		if podspec.IsBare(p) {
			out = append(out, p.Namespace+"/"+p.Name)
		}
	}
	return out
}

// recompute reads the gang again from its members: its lists, its spec
// (its first member's by name), its state and why, and its job (made at
// first sight and kept while the gang lives; its demand, work and class
// follow the spec; its submit time is the earliest creation among its
// pending and bound members, never raised).
func (s *Store) recompute(g *Gang) {
	names := make([]string, 0, len(g.members))
	for n := range g.members {
		names = append(names, n)
	}
	slices.Sort(names)
	g.Pending, g.Bound, g.Finished = nil, nil, nil
	g.Failed, g.Why, g.bare, g.JobPods, g.tols = 0, "", 0, 0, 0
	g.Gen = s.generation + 1
	if len(names) == 0 {
		return
	}
	spec := g.members[names[0]].spec
	disagree, leaving := "", false
	var jobs map[string]int // bound pods per owning Job
	submit := math.Inf(1)
	for _, n := range names {
		e := g.members[n]
		if disagree == "" && (e.spec.GPUs != spec.GPUs || e.spec.Size != spec.Size || e.spec.Class != spec.Class) {
			disagree = n
		}
		p := e.eff
		switch e.role {
		case rolePending:
			g.Pending = append(g.Pending, p)
			g.tols += len(p.Spec.Tolerations)
		case roleFinished:
			g.Finished = append(g.Finished, n)
			if p.Status.Phase == corev1.PodFailed {
				g.Failed++
			}
			continue
		case roleBound:
			g.Bound = append(g.Bound, p)
			if p.DeletionTimestamp != nil {
				leaving = true
			}
			if ref := metav1.GetControllerOfNoCopy(p); ref == nil {
				g.bare++
			} else if ref.Kind == "Job" && strings.HasPrefix(ref.APIVersion, "batch/") {
				if jobs == nil {
					jobs = map[string]int{}
				}
				jobs[ref.Name]++
				g.JobPods = max(g.JobPods, jobs[ref.Name])
			}
		}
		submit = math.Min(submit, float64(p.CreationTimestamp.UnixNano())/1e9-s.cfg.Epoch)
	}
	g.Spec = spec
	switch {
	case disagree != "":
		g.State, g.Why = GangWaiting, fmt.Sprintf("gang %s: members disagree on GPUs per pod, %s or %s (pod %s)",
			g.Key, spec.SizeName(), podspec.AnnClass, disagree)
	case leaving:
		g.State = GangLeaving
	default:
		g.State, g.Why = s.stateOf(g)
	}
	if g.Job == nil {
		g.Job = workload.NewJob(workload.Spec{
			ID: s.nextID, GPUs: spec.GPUs * spec.Size, Submit: submit, Iterations: spec.Iters,
			Model: spec.Model, IterTime: spec.IterTime, Class: spec.Class, Tracked: true,
		})
		s.nextID++
		s.byJob[g.Job] = g
	} else {
		// The gang's members may have changed what it is (a Job's new
		// parallelism, a new wave of pods): its job follows, keeping
		// its identity and what it has run.
		j := g.Job
		j.GPUs, j.Iterations, j.Model, j.IterTime, j.Class = spec.GPUs*spec.Size, spec.Iters, spec.Model, spec.IterTime, spec.Class
		if submit < j.Submit {
			j.Submit = submit
		}
	}
}

// stateOf is the state of a gang whose members agree and none of whose
// bound members is being deleted.
func (s *Store) stateOf(g *Gang) (GangState, string) {
	n := len(g.Pending) + len(g.Bound)
	size, per := g.Spec.Size, g.Spec.GPUs
	switch {
	case n == 0:
		return GangLeaving, "" // every member finished: nothing to place, nothing to say
	case n > size:
		return GangWaiting, fmt.Sprintf("gang %s has %d pods but %s says %d", g.Key, n, g.Spec.SizeName(), size)
	case len(g.Bound) == size:
		return GangRunning, ""
	case len(g.Bound) > 0 && len(g.Finished) > 0:
		return GangLeaving, "" // some members finished, the others still hold their GPUs
	case len(g.Bound) > 0:
		return GangPartial, ""
	case n < size:
		why := fmt.Sprintf("gang of %d waits: %d of %d pods exist", size, n, size)
		if bad := s.badOf[g.Key]; len(bad) > 0 {
			// Its missing pods exist but cannot be placed: say why,
			// not that they are missing.
			keys := slices.Sorted(maps.Keys(bad))
			why = fmt.Sprintf("gang of %d waits: %d of its pods can be placed; pod %s cannot: %s", size, n, keys[0], bad[keys[0]])
			if len(keys) > 1 {
				why += fmt.Sprintf(" (and %d more)", len(keys)-1)
			}
		}
		return GangWaiting, why
	case s.lay.base == nil:
		return GangWaiting, "no schedulable node has allocatable " + string(podspec.ResourceGPU)
	case per > s.lay.maxPer:
		return GangWaiting, fmt.Sprintf("each pod asks %d GPUs but the largest node has %d", per, s.lay.maxPer)
	case per*size > s.lay.base.Size():
		return GangWaiting, fmt.Sprintf("gang of %d asks %d GPUs but the cluster has %d", size, per*size, s.lay.base.Size())
	}
	return GangQueued, ""
}

// resolve brings gangs, nodes and the derived lists up to date with the
// pods applied since the last Sync.
func (s *Store) resolve() {
	regroup := false
	if len(s.dirtyGangs) > 0 {
		dirty := make([]*Gang, 0, len(s.dirtyGangs))
		for g := range s.dirtyGangs {
			dirty = append(dirty, g)
		}
		clear(s.dirtyGangs)
		// Key order: new gangs get their job ids in it.
		slices.SortFunc(dirty, func(a, b *Gang) int { return strings.Compare(a.Key, b.Key) })
		for _, g := range dirty {
			before, owner, group := g.sig(), g.owner(), g.Spec.Group
			s.recompute(g)
			if len(g.members) == 0 {
				delete(s.gangs, g.Key)
				delete(s.byJob, g.Job)
				delete(s.gpusDirty, g)
				s.removed = append(s.removed, g)
				s.resorted = true
				continue
			}
			if g.sig() != before {
				s.planChanged = true
			}
			if g.Spec.Group != group {
				regroup = true
			}
			s.gpusDirty[g] = true
			if g.owner() != owner {
				for _, p := range g.Bound {
					s.dirtyNodes[p.Spec.NodeName] = true
				}
			}
		}
	}
	if len(s.dirtyNodes) > 0 {
		names := make([]string, 0, len(s.dirtyNodes))
		for n := range s.dirtyNodes {
			names = append(names, n)
		}
		clear(s.dirtyNodes)
		slices.Sort(names)
		for _, n := range names {
			if s.resolveNode(n) {
				s.planChanged = true
			}
		}
	}
	for g := range s.gpusDirty {
		old := g.GPUs
		g.GPUs = g.GPUs[:0:0]
		for _, p := range g.Bound {
			if e := g.members[p.Name]; e != nil {
				g.GPUs = append(g.GPUs, e.held...)
			}
		}
		slices.Sort(g.GPUs)
		if !slices.Equal(old, g.GPUs) {
			s.planChanged = true
		}
	}
	clear(s.gpusDirty)
	if s.resorted {
		s.planChanged = true
		regroup = true
		s.resorted = false
		s.sorted = s.sorted[:0:0]
		for _, g := range s.gangs {
			s.sorted = append(s.sorted, g)
		}
		slices.SortFunc(s.sorted, func(a, b *Gang) int { return strings.Compare(a.Key, b.Key) })
	}
	if regroup {
		s.grouped = s.grouped[:0:0]
		for _, g := range s.sorted {
			if g.Spec.Group.Kind != podspec.GroupNone {
				s.grouped = append(s.grouped, g)
			}
		}
	}
	if s.badDirty {
		s.badDirty = false
		s.badList = s.badList[:0:0]
		for _, b := range s.bad {
			s.badList = append(s.badList, *b)
		}
		slices.SortFunc(s.badList, func(a, b BadPod) int { return strings.Compare(Key(a.Pod), Key(b.Pod)) })
	}
	if s.warnDirty {
		s.warnDirty = false
		s.warnings = s.warnings[:0:0]
		for _, name := range s.lay.names {
			if u := s.use[name]; u != nil {
				s.warnings = append(s.warnings, u.warnings...)
			}
		}
	}
}
