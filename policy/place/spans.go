package place

import (
	"github.com/palsched/pal/variability"
	"github.com/palsched/pal/workload"
)

// pmFirstSpans reports whether PM-First's pick under the artifact's
// tie-break (pmFirst) for pinned job j, made once j's own GPUs are lent
// back (see lend), certainly spans nodes; false when it may not, or
// when the count structures cannot tell without picking. The migration
// rule (mayPay) then prices the pick with the locality penalty, as when
// no node has room for j: at 27,648 GPUs a PM-First round under the
// rule offered about 800 pinned jobs of 2 or 4 GPUs a pick (lend, pick,
// unlend), and every one of those picks spanned nodes and so failed to
// pay; each is now kept on this count.
//
// It reads the lowest bin holding a free or own GPU, b0, with j's own
// GPUs counted in their nodes' buckets as lend would count them (own
// GPUs are reserved, so not free, until then). If the bin holds at most
// GPUs(j) of them, the pick takes them all: it spans when they lie on
// two nodes or more. If it holds more, the pick is all from b0 and
// starts at the node whose count k is nearest GPUs(j) (ties by node id):
// it spans when the nearest counts are all below GPUs(j), as that node
// gives up all its k GPUs and the rest come from other nodes. Class c
// must be live (its structures current), as it is at a pinned job's
// turn inside its class's run of the prefix.
func (x *scoreIndex) pmFirstSpans(j *workload.Job) bool {
	return x.pmFirstSpansOf(j.Class, j.GPUs, j.GPUsHeld)
}

// pmFirstSpansOf is pmFirstSpans for a pinned job of class c and n GPUs
// holding h, without reading the job (see mover.spans).
func (x *scoreIndex) pmFirstSpansOf(c variability.Class, n int, h []int) bool {
	if c < 0 || int(c) >= len(x.cls) || !x.live[c] || n < 2 || n > x.maxPer || len(h) != n {
		return false
	}
	ci := &x.cls[c]
	b0 := int32(ci.first(x.total))
	for _, g := range h {
		if x.isFree(g) {
			return false // not reserved: lend would not count it
		}
		b0 = min(b0, ci.gbin[g])
	}
	bi := &ci.bins[b0]
	// Own GPUs in b0, by node (a node's GPUs are consecutive in h): the
	// pair's count before (old) and after (new) lend.
	type move struct{ old, new int32 }
	var moved [8]move
	nm, own, fresh := 0, int32(0), 0
	for a := 0; a < len(h); {
		nd := x.nodeOf(h[a])
		m, pos := int32(0), int32(0)
		for ; a < len(h) && x.nodeOf(h[a]) == nd; a++ {
			if ci.gbin[h[a]] == b0 {
				m++
				pos = ci.pos[h[a]] >> 6
			}
		}
		if m == 0 {
			continue
		}
		if nm == len(moved) {
			return false
		}
		fi := bi.off + pos
		old := int32(0) // a single GPU's pair: its GPU is j's, not free
		if ci.only[fi] < 0 {
			old = ci.cnt[fi]
		}
		if old == 0 {
			fresh++
		}
		moved[nm] = move{old, old + m}
		nm++
		own += m
	}
	pop := ci.pop[bi.popOff : bi.popOff+bi.maxCnt+1]
	if int(ci.binFree[b0]+own) <= n {
		// The pick takes the whole bin: it spans when two nodes hold it.
		nodes := fresh
		for _, p := range pop[1:] {
			nodes += int(p)
		}
		return nodes >= 2
	}
	below, above := n, n // distances |k - n| of the nearest counts k < n and k >= n (n: none)
	for k := int32(1); k <= bi.maxCnt; k++ {
		p := pop[k]
		for _, mv := range moved[:nm] {
			if mv.old == k {
				p--
			}
			if mv.new == k {
				p++
			}
		}
		if p <= 0 {
			continue
		}
		if d := n - int(k); d > 0 {
			below = min(below, d)
		} else {
			above = min(above, -d)
		}
	}
	return below < above
}
