package tenancy

import (
	"fmt"
	"math/rand/v2"
	"slices"

	"github.com/palsched/pal/internal/quote"
)

// Leaf names one device of the physical cluster.
type Leaf struct {
	Node string
	GPU  int // device index inside the node
}

// PrivateDraw draws from r which physical cells a VC's private cluster
// (PrivateConfig) is made of: for every preassigned cell of the VC, a
// physical cell of the same chain and level, uniformly among those that
// share no device with the cells drawn before it (larger cells first, so
// that buddy alignment always leaves room for the smaller ones); a pinned
// cell is its own. It returns, for each GPU of the private cluster in its
// numbering (node by node in PrivateConfig's order, devices ascending),
// the physical device it stands for. Which GPUs a private cluster would
// own is arbitrary when GPUs of one type differ in speed; drawing it many
// times gives a reference that does not hang on one arbitrary choice.
func (s *Scheduler) PrivateDraw(vcName string, r *rand.Rand) ([]Leaf, error) {
	vc := s.byVC[vcName]
	if vc == nil {
		return nil, fmt.Errorf("tenancy: unknown VC %s", quote.Value(vcName))
	}
	// The cells PrivateConfig makes, in its order, and what each draws.
	type want struct {
		ch    *Chain
		level int
		phys  *PCell // drawn
	}
	var wants []*want
	for _, vcc := range vc.chains {
		for _, v := range vcc.pre {
			wants = append(wants, &want{ch: vcc.chain, level: v.level})
		}
	}
	for _, vcc := range vc.pins {
		wants = append(wants, &want{ch: vcc.pinned.chain, level: vcc.pinned.level, phys: vcc.pinned})
	}
	taken := map[*PCell]bool{} // drawn leaves
	for _, w := range wants {
		if w.phys != nil {
			for _, l := range pleavesOf(w.phys, nil) {
				taken[l] = true
			}
		}
	}
	order := make([]*want, 0, len(wants))
	for _, w := range wants {
		if w.phys == nil {
			order = append(order, w)
		}
	}
	slices.SortStableFunc(order, func(a, b *want) int { return b.ch.types[b.level].leaves - a.ch.types[a.level].leaves })
	for _, w := range order {
		var free []*PCell
		var walk func(p *PCell)
		walk = func(p *PCell) {
			if p.level == w.level {
				for _, l := range pleavesOf(p, nil) {
					if taken[l] {
						return
					}
				}
				free = append(free, p)
				return
			}
			for _, c := range p.children {
				walk(c)
			}
		}
		for _, t := range w.ch.tops {
			if t.pinned == "" {
				walk(t)
			}
		}
		if len(free) == 0 {
			return nil, fmt.Errorf("tenancy: VC %s: no free %s cell left for its private cluster", vcName, w.ch.types[w.level].name)
		}
		w.phys = free[r.IntN(len(free))]
		for _, l := range pleavesOf(w.phys, nil) {
			taken[l] = true
		}
	}
	var out []Leaf
	for _, w := range wants {
		if w.ch.cpu {
			continue // the simulator's cluster is its GPUs
		}
		for _, l := range pleavesOf(w.phys, nil) {
			out = append(out, Leaf{Node: l.node, GPU: l.gpu})
		}
	}
	return out, nil
}
