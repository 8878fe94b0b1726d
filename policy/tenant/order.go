package tenant

import (
	"slices"

	"github.com/palsched/pal/policy"
	"github.com/palsched/pal/workload"
)

// PerVC is the order slot of the two-layer design: each VC runs its own
// instance of the chosen scheduler on its own jobs only (Tiresias keeps
// per-job state, so instances are not shared), as it would on its private
// cluster. Inside a VC, jobs go by HiveD priority first (higher first, the
// order HiveD's Kubernetes queue gives pods; opportunistic jobs last), then
// by the VC's scheduler; with one priority, as in every trace without a
// priority column, that is the scheduler's order alone.
//
// The merged order lists the VCs in config order. Each VC blocks on its
// own, so the merge decides only the order in which VCs bind physical
// cells (safety holds whatever it is) and the order of opportunistic jobs,
// which run after every guaranteed one.
//
// The private reference of the anomaly metric runs the same PerVC on the
// VC's private cluster, so both see the same intra-VC order.
type PerVC struct {
	l     *Layout
	name  string
	by    map[string]policy.Scheduler
	mk    func() (policy.Scheduler, error)
	split map[string][]*workload.Job
}

// NewPerVC builds a per-VC order; mk makes one VC's scheduler.
func NewPerVC(l *Layout, mk func() (policy.Scheduler, error)) (*PerVC, error) {
	p := &PerVC{l: l, by: map[string]policy.Scheduler{}, mk: mk, split: map[string][]*workload.Job{}}
	for _, vc := range l.VCs() {
		s, err := mk()
		if err != nil {
			return nil, err
		}
		p.by[vc] = s
		p.name = s.Name()
	}
	return p, nil
}

// Name implements policy.Scheduler: the VCs' scheduler's name.
func (p *PerVC) Name() string { return p.name }

// Order implements policy.Scheduler.
func (p *PerVC) Order(now float64, jobs []*workload.Job) []*workload.Job {
	for vc, js := range p.split {
		p.split[vc] = js[:0]
	}
	for _, j := range jobs {
		vc := p.l.vcOf(&j.Spec)
		p.split[vc] = append(p.split[vc], j)
	}
	out := jobs[:0]
	for _, vc := range p.l.VCs() {
		js := p.split[vc]
		if len(js) == 0 {
			continue
		}
		js = p.by[vc].Order(now, js)
		slices.SortStableFunc(js, func(a, b *workload.Job) int { return b.VCPriority - a.VCPriority })
		out = append(out, js...)
		p.split[vc] = js
	}
	return out
}

// Forget passes a finished job on to the schedulers that keep per-job
// state.
func (p *PerVC) Forget(id int) {
	for _, s := range p.by {
		if f, ok := s.(interface{ Forget(id int) }); ok {
			f.Forget(id)
		}
	}
}
