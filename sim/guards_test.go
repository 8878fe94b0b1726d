package sim

import (
	"slices"
	"testing"
)

// order lists the linked guards head to tail, checking the back links.
func (g *guardList) order(t *testing.T) []int32 {
	t.Helper()
	var out []int32
	prev := int32(-1)
	for s := g.head; s >= 0; s = g.next[s] {
		if g.prev[s] != prev {
			t.Fatalf("slot %d: prev %d, want %d", s, g.prev[s], prev)
		}
		out = append(out, s)
		prev = s
	}
	if g.tail != prev {
		t.Fatalf("tail %d, want %d", g.tail, prev)
	}
	return out
}

// One guard per slot, in the order armed: a job that waits again moves
// to the back with its new base, a finished job's guard goes, and pop
// takes the head. Worked by hand: arm 0, 1, 2 at rounds 5, 6, 7; slot 1
// waits again at 9 (back of the line); slot 2 finishes; arm 3 at 10:
// the line is 0 (base 5), 1 (base 9), 3 (base 10).
func TestGuardListOnePerSlot(t *testing.T) {
	g := guardList{head: -1, tail: -1}
	g.grow(4)
	for s, base := range []int{5, 6, 7} {
		g.push(int32(s), base, 100+s)
	}
	g.remove(1)
	g.push(1, 9, 101)
	g.remove(2)
	g.remove(2) // not linked: nothing
	g.push(3, 10, 103)
	if got := g.order(t); !slices.Equal(got, []int32{0, 1, 3}) {
		t.Fatalf("order %v, want [0 1 3]", got)
	}
	for _, want := range []event{{base: 5, seq: 100, slot: 0}, {base: 9, seq: 101, slot: 1}, {base: 10, seq: 103, slot: 3}} {
		if e := g.pop(); e != want {
			t.Fatalf("pop %+v, want %+v", e, want)
		}
	}
	if g.head != -1 || g.tail != -1 || len(g.order(t)) != 0 {
		t.Fatalf("not empty: head %d tail %d", g.head, g.tail)
	}
}

// A job preempted a thousand times holds one guard, not a thousand.
func TestGuardListBoundedByJobs(t *testing.T) {
	g := guardList{head: -1, tail: -1}
	g.grow(2)
	for r := range 1000 {
		s := int32(r % 2)
		g.remove(s)
		g.push(s, r, int(s))
	}
	if got := g.order(t); !slices.Equal(got, []int32{0, 1}) || g.base[0] != 998 || g.base[1] != 999 {
		t.Fatalf("order %v bases %v, want [0 1] at 998, 999", got, g.base)
	}
}
