package round

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/workload"
)

// applyRound is a round of the million-job run's shape on 4,608x6 GPUs:
// every GPU held, by 13,824 two-GPU jobs in arrival order, and an answer
// that moves three in four of them (that run averages 11,500 migrations a
// round) to fresh lists and hands the rest their own.
func applyRound(b *testing.B) (*cluster.Cluster, []*workload.Job, [2][][]int) {
	cl, err := cluster.New(4608, 6)
	if err != nil {
		b.Fatal(err)
	}
	n := cl.Size() / 2
	order := make([]*workload.Job, n)
	perm := rand.New(rand.NewPCG(1, 1)).Perm(n) // where each job sits
	for i := range order {
		order[i] = workload.NewJob(workload.Spec{ID: i, GPUs: 2})
		order[i].GPUsHeld = []int{2 * perm[i], 2*perm[i] + 1}
		if err := cl.Assign(i, order[i].GPUsHeld); err != nil {
			b.Fatal(err)
		}
	}
	// Two answers that swap places with each other, so that applying
	// them in turn runs the same round again and again.
	var answers [2][][]int
	answers[0] = make([][]int, n)
	for i, j := range order {
		answers[0][i] = j.GPUsHeld
	}
	answers[1] = make([][]int, n)
	for i := range order {
		k := i
		if i%4 != 3 {
			k = i - i%4 + (i%4+1)%3 // a turn among three neighbours: a migration each
		}
		answers[1][i] = slices.Clone(answers[0][k])
	}
	return cl, order, answers
}

// BenchmarkApplyRound applies that round with the per-job Apply (release,
// assign and compare each job; what the simulator did before) and with the
// Applier (one pass, the owner table rebuilt). Target: the Applier at most
// half the per-job Apply's time (benchstat medians), no allocation:
//
//	go test ./round -run '^$' -bench ApplyRound -count 5
func BenchmarkApplyRound(b *testing.B) {
	for _, way := range []string{"per-job", "applier"} {
		b.Run(fmt.Sprintf("%s/4608x6", way), func(b *testing.B) {
			cl, order, answers := applyRound(b)
			var a Applier
			moves := 0
			visit := func(i int, k Kind) {
				if k == Migrate {
					moves++
				}
			}
			b.ReportAllocs()
			r := 0
			for b.Loop() {
				alloc := answers[(r+1)%2]
				var err error
				if way == "per-job" {
					err = Apply(cl, order, alloc, visit)
				} else {
					err = a.Apply(cl, order, alloc, visit)
				}
				if err != nil {
					b.Fatal(err)
				}
				for i, j := range order {
					j.GPUsHeld = alloc[i]
				}
				r++
			}
			b.ReportMetric(float64(moves)/float64(r), "moves/op")
		})
	}
}
