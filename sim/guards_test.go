package sim

import (
	"math/rand/v2"
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

// The list against a plain reference on seeded random operations: the
// reference keeps the armed guards in a slice in arming order (re-arming
// a slot drops its old entry first, as waiting does), so after every
// operation the list must hold the same slots, in the same order, with
// the same base and seq, and pop must return the reference's first.
func TestGuardListMatchesReference(t *testing.T) {
	type entry struct {
		slot      int32
		base, seq int
	}
	for _, tc := range []struct {
		name       string
		seed       uint64
		slots, ops int
	}{
		{"one slot", 1, 1, 200},
		{"few slots", 2, 3, 2000},
		{"slab", 3, 64, 20000},
		{"grown mid-run", 4, 300, 20000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 0))
			g := guardList{head: -1, tail: -1}
			slots := min(tc.slots, 8)
			g.grow(slots)
			var ref []entry
			find := func(s int32) int {
				return slices.IndexFunc(ref, func(e entry) bool { return e.slot == s })
			}
			round := 0
			for op := range tc.ops {
				if slots < tc.slots && op%50 == 49 {
					n := min(8, tc.slots-slots)
					g.grow(n)
					slots += n
				}
				round += rng.IntN(2)
				s := int32(rng.IntN(slots))
				switch k := rng.IntN(10); {
				case k < 5: // a job starts waiting: its old guard goes, a new one is armed
					g.remove(s)
					g.push(s, round, op)
					if i := find(s); i >= 0 {
						ref = slices.Delete(ref, i, i+1)
					}
					ref = append(ref, entry{s, round, op})
				case k < 8: // the job runs or finishes
					g.remove(s)
					if i := find(s); i >= 0 {
						ref = slices.Delete(ref, i, i+1)
					}
				default: // the head falls due
					if len(ref) == 0 {
						if g.head != -1 {
							t.Fatalf("op %d: head %d on an empty list", op, g.head)
						}
						continue
					}
					want := event{base: ref[0].base, seq: ref[0].seq, slot: ref[0].slot}
					if e := g.pop(); e != want {
						t.Fatalf("op %d: pop %+v, want %+v", op, e, want)
					}
					ref = ref[1:]
				}
				got := g.order(t)
				if len(got) != len(ref) {
					t.Fatalf("op %d: %d guards, want %d", op, len(got), len(ref))
				}
				for i, s := range got {
					if e := ref[i]; s != e.slot || int(g.base[s]) != e.base || int(g.seq[s]) != e.seq {
						t.Fatalf("op %d: guard %d is slot %d (base %d, seq %d), want %+v", op, i, s, g.base[s], g.seq[s], e)
					}
				}
			}
		})
	}
}
