package variability

import "testing"

// benchLearner is a 6912x4 (27,648-GPU) cluster, the largest of the
// placement timings, with values drawn uniformly in [0.9, 1.1] from seed
// 1, and its running jobs: the GPUs cut into jobs of 1, 2, 4, 8 and 16
// GPUs in turn (every GPU busy), each job of class (job index mod 4).
func benchLearner(b *testing.B) (*Learner, [][]int, []Class) {
	const n = 27648
	rng := NewRand(1)
	t := &Table{}
	for c := range t.Values {
		t.Values[c] = make([]float64, n)
		for g := range n {
			t.Values[c][g] = 0.9 + 0.2*rng.Float64()
		}
	}
	sc, err := NewScores(t, BinOptions{Seed: 1}, nil)
	if err != nil {
		b.Fatal(err)
	}
	l, err := NewLearner(t, sc, LearnOptions{Bin: BinOptions{Seed: 1}})
	if err != nil {
		b.Fatal(err)
	}
	var jobs [][]int
	var cls []Class
	sizes := []int{1, 2, 4, 8, 16}
	for g, i := 0, 0; g < n; i++ {
		k := min(sizes[i%len(sizes)], n-g)
		ids := make([]int, k)
		for j := range ids {
			ids[j] = g + j
		}
		jobs = append(jobs, ids)
		cls = append(cls, Class(i%NumClasses))
		g += k
	}
	return l, jobs, cls
}

// A round in which every job runs at its believed pace: the learner's
// steady state (observations in the band, no re-binning).
func BenchmarkLearnerRoundSteady(b *testing.B) {
	l, jobs, cls := benchLearner(b)
	pace := make([]float64, len(jobs))
	for i, g := range jobs {
		for _, x := range g {
			pace[i] = max(pace[i], l.Belief(cls[i], x))
		}
	}
	b.ResetTimer()
	for b.Loop() {
		for i, g := range jobs {
			l.Observe(cls[i], g, pace[i])
		}
		if _, err := l.Rebin(); err != nil {
			b.Fatal(err)
		}
	}
}

// A round in which one class-A job is 30% slower than believed, so class
// A is binned again: the learner's most expensive round.
func BenchmarkLearnerRoundRebin(b *testing.B) {
	l, jobs, cls := benchLearner(b)
	pace := make([]float64, len(jobs))
	for i, g := range jobs {
		for _, x := range g {
			pace[i] = max(pace[i], l.Belief(cls[i], x))
		}
	}
	b.ResetTimer()
	for k := 0; b.Loop(); k++ {
		for i, g := range jobs {
			y := pace[i]
			if i == 0 {
				// GPU 0 alone, alternately slow and back, so every round moves
				// it by more than the re-bin threshold.
				y *= 1.3 + 0.3*float64(k%2)
			}
			l.Observe(cls[i], g, y)
		}
		if _, err := l.Rebin(); err != nil {
			b.Fatal(err)
		}
	}
}
