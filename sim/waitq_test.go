package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// check requires q to hold exactly want (sorted) and its blocks to keep
// their invariants: non-empty, in bounds, sorted within and across, last
// equal to the final item, and n equal to the count.
func (q *waitq) check(want []item) error {
	if q.Len() != len(want) {
		return fmt.Errorf("Len %d, want %d", q.Len(), len(want))
	}
	if c := cap(q.bs); c > 0 && (len(q.back) == 0 || &q.bs[:c][c-1] != &q.back[len(q.back)-1]) {
		return fmt.Errorf("the blocks (cap %d) do not end at their back array's end (len %d)", c, len(q.back))
	}
	var got []item
	for i := range q.bs {
		b := &q.bs[i]
		if b.lo < 0 || b.hi > qBlock || b.lo >= b.hi {
			return fmt.Errorf("block %d: bounds [%d,%d)", i, b.lo, b.hi)
		}
		if b.last != b.a[b.hi-1] {
			return fmt.Errorf("block %d: last %v, final item %v", i, b.last, b.a[b.hi-1])
		}
		got = append(got, b.items()...)
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("blocks hold %v\nwant %v", got, want)
	}
	var scanned []item
	q.Scan(func(it item) bool { scanned = append(scanned, it); return true })
	if !slices.Equal(scanned, want) {
		return fmt.Errorf("Scan gives %v, want %v", scanned, want)
	}
	var walked []item
	for c := q.first(); c.ok(); c.next() {
		walked = append(walked, c.item())
	}
	if !slices.Equal(walked, want) {
		return fmt.Errorf("cursor gives %v, want %v", walked, want)
	}
	m, ok := q.Min()
	if ok != (len(want) > 0) || ok && m != want[0] {
		return fmt.Errorf("Min %v %v, want %v", m, ok, want)
	}
	return nil
}

// TestWaitqMatchesSortedSlice runs random sequences of inserts and
// deletes, in the patterns the round loop produces (appends behind the
// last item, takes from the front, anywhere in between, few distinct
// keys so that the sequence breaks ties), against a sorted slice.
func TestWaitqMatchesSortedSlice(t *testing.T) {
	for seed := uint64(0); seed < 60; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		var q waitq
		var want []item
		seq := int32(0)
		var last item
		keys := 1 + rng.IntN(50)
		if seed%3 == 0 {
			keys = 1 << 30
		}
		steps := 200 + rng.IntN(6000)
		pInsert := 0.3 + 0.4*rng.Float64()
		for step := 0; step < steps; step++ {
			if len(want) == 0 || rng.Float64() < pInsert {
				var x item
				switch rng.IntN(4) {
				case 0: // behind everything
					x = item{hi: 1 << 40, lo: uint64(seq), seq: seq}
				case 1: // just behind the last one filed, as a round files its preempted jobs
					x = item{hi: last.hi, lo: last.lo + uint64(rng.IntN(3)), seq: seq}
				default:
					x = item{hi: uint64(rng.IntN(3)), lo: uint64(rng.IntN(keys)), seq: seq}
				}
				x.slot = seq
				seq++
				last = x
				q.Set(x)
				i, _ := slices.BinarySearchFunc(want, x, func(a, b item) int {
					if itemLess(a, b) {
						return -1
					} else if itemLess(b, a) {
						return 1
					}
					return 0
				})
				want = slices.Insert(want, i, x)
			} else {
				i := 0 // the front
				if rng.IntN(2) == 0 {
					i = rng.IntN(len(want))
				}
				q.Delete(want[i])
				want = slices.Delete(want, i, i+1)
			}
			if step%17 == 0 || step == steps-1 {
				if err := q.check(want); err != nil {
					t.Fatalf("seed %d step %d: %v", seed, step, err)
				}
			}
		}
		// Drain from the front, then the set is empty and reusable.
		for len(want) > 0 {
			q.Delete(want[0])
			want = want[1:]
		}
		if err := q.check(nil); err != nil {
			t.Fatalf("seed %d drained: %v", seed, err)
		}
		q.Set(item{seq: 1})
		if err := q.check([]item{{seq: 1}}); err != nil {
			t.Fatalf("seed %d reused: %v", seed, err)
		}
	}
}

func TestWaitqDeleteMissingPanics(t *testing.T) {
	var q waitq
	q.Set(item{seq: 1})
	q.Set(item{seq: 3})
	for _, x := range []item{{seq: 2}, {seq: 4}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("Delete(%v) of a missing item did not panic", x)
				}
			}()
			q.Delete(x)
		}()
	}
}

// BenchmarkWaitq takes the smallest item of a queue of n and files one:
// random (anywhere), append (behind the last item, as FIFO does) or back
// (among the last few hundred, as LAS does when the waiting jobs' attained
// service is close: a job that ran a round goes near the back).
func BenchmarkWaitq(b *testing.B) {
	for _, n := range []int{4096, 1 << 20} {
		for _, pattern := range []string{"random", "append", "back"} {
			b.Run(fmt.Sprintf("%s/n=%d", pattern, n), func(b *testing.B) {
				rng := rand.New(rand.NewPCG(1, 2))
				var q waitq
				seq := int32(0)
				next := func() item {
					seq++
					switch pattern {
					case "append":
						return item{lo: uint64(seq), seq: seq}
					case "back":
						return item{lo: uint64(seq) - rng.Uint64N(300), seq: seq}
					}
					return item{lo: rng.Uint64N(1 << 40), seq: seq}
				}
				for range n {
					q.Set(next())
				}
				b.ResetTimer()
				for range b.N {
					q.Set(next())
					m, _ := q.Min()
					q.Delete(m)
				}
			})
		}
	}
}

// TestWaitqSetRun files ascending runs into queues by hand: each case
// gives the queue's items (filed one at a time, keys only: seq breaks
// ties as the key's second part), the run and the items in order after
// it, worked out by hand, and how many blocks hold them.
func TestWaitqSetRun(t *testing.T) {
	// it makes an item of key k and sequence s (its slot too).
	it := func(k uint64, s int32) item { return item{lo: k, seq: s, slot: s} }
	seqs := func(from, to int32, k uint64) []item { // keys k, seqs from..to-1
		var out []item
		for s := from; s < to; s++ {
			out = append(out, it(k, s))
		}
		return out
	}
	cases := []struct {
		name       string
		have, run  []item
		want       []item
		wantBlocks int
	}{
		{"into an empty queue", nil, []item{it(1, 1), it(2, 2), it(3, 3)},
			[]item{it(1, 1), it(2, 2), it(3, 3)}, 1},
		{"around and between the queue's items",
			[]item{it(10, 1), it(20, 2), it(30, 3)},
			[]item{it(5, 4), it(15, 5), it(16, 6), it(25, 7), it(35, 8)},
			[]item{it(5, 4), it(10, 1), it(15, 5), it(16, 6), it(20, 2), it(25, 7), it(30, 3), it(35, 8)}, 1},
		{"equal keys go by sequence",
			[]item{it(7, 1), it(7, 4), it(9, 2)},
			[]item{it(7, 3), it(7, 5), it(8, 6)},
			[]item{it(7, 1), it(7, 3), it(7, 4), it(7, 5), it(8, 6), it(9, 2)}, 1},
		{"a run of one", []item{it(1, 1), it(3, 3)}, []item{it(2, 2)},
			[]item{it(1, 1), it(2, 2), it(3, 3)}, 1},
		{"an empty run", []item{it(1, 1)}, nil, []item{it(1, 1)}, 1},
		// qSplit-1 filed behind each other fill one block to one short
		// of qSplit: the run's first item fills it, the second finds it
		// full and starts a new last block (1 item), which the next
		// (qBlock-1)/2 join in one move (what fits one side of a
		// centred block), then more up to qSplit; the last 3 start a
		// third.
		{"behind a block about to split", seqs(0, qSplit-1, 1), seqs(qSplit-1, 2*qSplit+3, 2),
			append(seqs(0, qSplit-1, 1), seqs(qSplit-1, 2*qSplit+3, 2)...), 3},
		// qSplit-1 in one block and 40 to go between its first and
		// second item: a block may reach qSplit, so 1 goes in, then the
		// block is split in halves, the second joins the first half and
		// the other 38 follow it in one move.
		{"into a block about to split",
			append([]item{it(1, 0)}, seqs(1, qSplit-1, 3)...), seqs(qSplit+4, qSplit+44, 2),
			append(append([]item{it(1, 0)}, seqs(qSplit+4, qSplit+44, 2)...), seqs(1, qSplit-1, 3)...), 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q waitq
			for _, x := range tc.have {
				q.Set(x)
			}
			q.SetRun(slices.Clone(tc.run))
			if err := q.check(tc.want); err != nil {
				t.Fatal(err)
			}
			if len(q.bs) != tc.wantBlocks {
				t.Errorf("%d blocks, want %d", len(q.bs), tc.wantBlocks)
			}
		})
	}
}

// TestWaitqSetRunMatchesSet files random ascending runs, as a round's
// stopped jobs come (few keys, runs landing together or spread), into
// queues shaped by random sets and deletes, and takes random ascending
// runs out with DeleteRun, as a round's launched jobs go (the queue's
// first items, some left out, or spread), and checks the result against
// a sorted slice and the block invariants.
func TestWaitqSetRunMatchesSet(t *testing.T) {
	for seed := uint64(0); seed < 40; seed++ {
		rng := rand.New(rand.NewPCG(seed, 11))
		var q waitq
		var want []item
		seq := int32(0)
		keys := 1 + rng.IntN(20)
		for step := 0; step < 200; step++ {
			switch {
			case len(want) > 0 && rng.IntN(3) == 0:
				n := rng.IntN(min(len(want), 150)) + 1
				var take func() bool
				switch rng.IntN(4) {
				case 0: // the first n
					take = func() bool { return true }
				case 1: // a few left out
					take = func() bool { return rng.IntN(8) != 0 }
				case 2: // every other one
					take = func() bool { return rng.IntN(2) == 0 }
				default: // spread over the queue
					take = func() bool { return rng.IntN(len(want)) < n }
				}
				var run, kept []item
				for _, x := range want {
					if len(run) < n && take() {
						run = append(run, x)
					} else {
						kept = append(kept, x)
					}
				}
				q.DeleteRun(run)
				want = kept
			case len(want) > 0 && rng.IntN(2) == 0:
				for n := rng.IntN(min(len(want), 150)) + 1; n > 0; n-- {
					i := 0
					if rng.IntN(4) == 0 {
						i = rng.IntN(len(want))
					}
					q.Delete(want[i])
					want = slices.Delete(want, i, i+1)
				}
			default:
				run := make([]item, rng.IntN(150))
				for i := range run {
					run[i] = item{lo: uint64(rng.IntN(keys)), seq: seq, slot: seq}
					seq++
				}
				slices.SortFunc(run, func(a, b item) int {
					if itemLess(a, b) {
						return -1
					}
					return 1
				})
				if rng.IntN(2) == 0 {
					q.SetRun(run)
				} else {
					for _, x := range run {
						q.Set(x)
					}
				}
				want = append(want, run...)
				slices.SortFunc(want, func(a, b item) int {
					if itemLess(a, b) {
						return -1
					}
					return 1
				})
			}
			if err := q.check(want); err != nil {
				t.Fatalf("seed %d step %d: %v", seed, step, err)
			}
		}
	}
}

// TestWaitqAddBlock checks where addBlock leaves the blocks: blocks at
// their array's end move to its front when that frees a quarter of it
// (the rest cleared), else to a fresh array twice as long (at least 8);
// with room at the end nothing moves.
func TestWaitqAddBlock(t *testing.T) {
	cases := []struct {
		name          string
		back, from, n int // blocks back[from:from+n] of an array of back
		wantBack      int // len(back) after
		wantFresh     bool
		wantFrom      int // where the blocks start in back after
	}{
		{"no array yet", 0, 0, 0, 8, true, 0},
		{"room at the end", 8, 2, 4, 8, false, 2},
		{"3 of 8 at the end: to the front", 8, 5, 3, 8, false, 0},
		{"6 of 8 at the end: a quarter free, to the front", 8, 2, 6, 8, false, 0},
		{"7 of 8: a fresh array of 14", 8, 1, 7, 14, true, 0},
		{"8 of 8: a fresh array of 16", 8, 0, 8, 16, true, 0},
		{"none left at the end of 8", 8, 8, 0, 8, false, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var q waitq
			if tc.back > 0 {
				q.back = make([]qblock, tc.back)
				for i := range q.back {
					q.back[i] = qblock{a: new([qBlock]item), lo: int32(100 + i)} // stale if outside the blocks
				}
				q.bs = q.back[tc.from : tc.from+tc.n]
			}
			old := q.back
			q.addBlock()
			if len(q.back) != tc.wantBack {
				t.Fatalf("back has %d blocks, want %d", len(q.back), tc.wantBack)
			}
			if fresh := len(old) == 0 || &old[0] != &q.back[0]; fresh != tc.wantFresh {
				t.Fatalf("fresh array %v, want %v", fresh, tc.wantFresh)
			}
			if len(q.bs) != tc.n || cap(q.bs) <= len(q.bs) {
				t.Fatalf("%d blocks of cap %d, want %d and room for one more", len(q.bs), cap(q.bs), tc.n)
			}
			if got := len(q.back) - cap(q.bs); got != tc.wantFrom {
				t.Fatalf("blocks start at %d, want %d", got, tc.wantFrom)
			}
			for i, b := range q.bs {
				if b.lo != int32(100+tc.from+i) {
					t.Errorf("block %d is the old block %d, want %d", i, b.lo-100, tc.from+i)
				}
			}
			if !tc.wantFresh && tc.from != tc.wantFrom { // moved to the front
				for i := tc.wantFrom + tc.n; i < len(q.back); i++ {
					if q.back[i] != (qblock{}) {
						t.Errorf("back[%d] = %+v past the blocks, want cleared", i, q.back[i])
					}
				}
			}
		})
	}
}

// TestWaitqSteadyAllocatesNothing drains a queue from the front and
// files behind its end, as LAS's rounds do, and checks that once the
// queue is warm a round allocates nothing: emptied blocks' arrays are
// reused and the block list moves back to its array's front rather
// than being copied to a fresh one.
func TestWaitqSteadyAllocatesNothing(t *testing.T) {
	var q waitq
	seq := int32(0)
	for ; seq < 2000; seq++ {
		q.Set(item{lo: uint64(seq), seq: seq})
	}
	var run []item
	round := func() {
		for range 30 {
			x, _ := q.Min()
			q.Delete(x)
		}
		run = run[:0]
		for range 30 {
			run = append(run, item{lo: uint64(seq), seq: seq})
			seq++
		}
		q.SetRun(run)
	}
	for range 1000 {
		round()
	}
	if a := testing.AllocsPerRun(2000, round); a != 0 {
		t.Errorf("%v allocations a round, want 0", a)
	}
	want := make([]item, 0, 2000)
	for s := seq - 2000; s < seq; s++ {
		want = append(want, item{lo: uint64(s), seq: s})
	}
	if err := q.check(want); err != nil {
		t.Fatal(err)
	}
}
