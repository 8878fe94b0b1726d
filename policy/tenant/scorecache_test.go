package tenant

import (
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/policy"
)

// A VC's restricted scores are cached per score table: asked again with
// the same table the sub-cluster hands back its copy, asked with a new
// table (learning re-binned the scores) it restricts the new one. On a
// 2x4 cluster whose VC holds GPUs 2, 3 and 5, a table scoring GPU g at
// 1 + g/10 restricts to 1.2, 1.3, 1.5; the next table, 2 + g/10, to 2.2,
// 2.3, 2.5.
func TestSubClusterScoresFollowTheTable(t *testing.T) {
	c, err := cluster.New(2, 4)
	if err != nil {
		t.Fatal(err)
	}
	var sc subCluster
	if !sc.build(c, func(g int) bool { return g == 2 || g == 3 || g == 5 }) {
		t.Fatal("no sub-cluster")
	}
	table := func(base float64) *policy.Scores {
		s := UniformScores(c)
		for k := range s.SF {
			for g := range s.SF[k] {
				s.SF[k][g] = base + float64(g)/10
			}
		}
		return s
	}
	check := func(s *policy.Scores, want ...float64) *policy.Scores {
		t.Helper()
		got := sc.scores(s)
		for k := range got.SF {
			for i, w := range want {
				if got.SF[k][i] != w {
					t.Fatalf("class %d sub-GPU %d: score %v, want %v", k, i, got.SF[k][i], w)
				}
			}
		}
		return got
	}
	first := table(1)
	a := check(first, 1.2, 1.3, 1.5)
	if b := check(first, 1.2, 1.3, 1.5); b != a {
		t.Error("the same table was restricted again instead of cached")
	}
	check(table(2), 2.2, 2.3, 2.5)
	if sc.scores(nil) != nil {
		t.Error("no scores restricted to something")
	}
}
