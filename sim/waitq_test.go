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
