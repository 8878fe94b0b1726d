// Package ftf is Gavel's finish-time-fairness policy as a simulator
// scheduler (the Gavel paper's finish-time fairness): every round it solves
//
//	minimise max_i ρ_i(x),  ρ_i(x) = (t_i + R_i / x_i) / Tiso_i,
//	Σ_i g_i·x_i ≤ C,  0 ≤ x_i ≤ 1,
//
// where x_i is the share of time job i runs on its g_i GPUs, t_i its time
// since arrival, R_i its remaining run time on its own gang and Tiso_i
// Gavel's isolated finish time: the time already charged at the isolated
// share plus R_i at that share, the share being min(1, (C/m)/g_i) with m
// active jobs. It then runs jobs in order of their deficit (the share x_i
// promised minus the share received since arrival).
//
// Gavel hands this convex program to a solver. With one GPU type the
// constraints are separable: for a target ρ each job needs
// x_i = R_i / (ρ·Tiso_i − t_i), and the target is feasible when every
// x_i ≤ 1 and Σ g_i·x_i ≤ C, which is monotone in ρ. Bisection on ρ with
// that closed-form test finds the optimum to 1e-9 relative, so no LP
// solver is needed.
package ftf

import (
	"cmp"
	"math"
	"slices"

	"github.com/palsched/pal/workload"
)

// Policy is Gavel's finish-time fairness. GPUs is the cluster size C.
type Policy struct {
	GPUs  int
	state map[int]*jobState
	last  float64
}

type jobState struct {
	iso      float64 // cumulative isolated time charged
	prevDone float64 // ideal run seconds done at the last solve
	prevIso  float64 // isolated share at the last solve
	received float64 // seconds run since arrival
	wasRun   bool
}

// New builds the policy for a cluster of gpus GPUs.
func New(gpus int) *Policy { return &Policy{GPUs: gpus, state: map[int]*jobState{}} }

// Name implements policy.Scheduler.
func (p *Policy) Name() string { return "gavel-ftf" }

// Forget drops a finished job's state.
func (p *Policy) Forget(id int) { delete(p.state, id) }

// Order implements policy.Scheduler.
func (p *Policy) Order(now float64, jobs []*workload.Job) []*workload.Job {
	dt := now - p.last
	p.last = now
	m := len(jobs)
	if m == 0 {
		return jobs
	}
	type view struct {
		j          *workload.Job
		t, r, tiso float64
		g          float64
		x, deficit float64
	}
	vs := make([]view, m)
	for i, j := range jobs {
		st := p.state[j.ID]
		if st == nil {
			st = &jobState{}
			p.state[j.ID] = st
		}
		if st.wasRun {
			st.received += dt
		}
		st.wasRun = j.Running()
		done := j.Executed * j.IterTime
		share := min(1, float64(p.GPUs)/float64(m)/float64(j.GPUs))
		if st.prevIso > 0 {
			st.iso += (done - st.prevDone) / st.prevIso
		}
		st.prevDone, st.prevIso = done, share
		r := math.Max(j.Remaining()*j.IterTime, 0)
		vs[i] = view{j: j, t: math.Max(now-j.Submit, 0), r: r, tiso: st.iso + r/share, g: float64(j.GPUs)}
	}
	need := func(rho float64, v *view) float64 {
		d := rho*v.tiso - v.t
		if d <= 0 {
			return math.Inf(1)
		}
		return v.r / d
	}
	feasible := func(rho float64) bool {
		sum := 0.0
		for i := range vs {
			x := need(rho, &vs[i])
			if x > 1 {
				return false
			}
			sum += vs[i].g * x
		}
		return sum <= float64(p.GPUs)*(1+1e-12)
	}
	lo, hi := 0.0, 1.0
	for !feasible(hi) && hi < 1e12 {
		lo, hi = hi, hi*2
	}
	for range 200 {
		if hi-lo <= 1e-9*hi {
			break
		}
		mid := (lo + hi) / 2
		if feasible(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	for i := range vs {
		v := &vs[i]
		v.x = min(1, need(hi, v))
		if v.t > 0 {
			v.deficit = v.x - p.state[v.j.ID].received/v.t
		} else {
			v.deficit = v.x
		}
	}
	slices.SortStableFunc(vs, func(a, b view) int {
		if c := cmp.Compare(b.deficit, a.deficit); c != 0 {
			return c
		}
		return cmp.Compare(a.j.ID, b.j.ID)
	})
	for i := range vs {
		jobs[i] = vs[i].j
	}
	return jobs
}
