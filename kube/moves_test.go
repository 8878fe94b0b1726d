package kube

import (
	"io"
	"log/slog"
	"testing"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/round"
	"github.com/palsched/pal/workload"
	"k8s.io/client-go/kubernetes/fake"
)

// A preemption's or migration's event names which of the gang's GPUs go
// to which gang and which stay free. It named every GPU of the gang as
// going to every taker: a gang whose four GPUs went two to one gang and
// two to none read as if the one took all four. Two 4-GPU nodes (n0 is
// GPUs 0-3, n1 GPUs 4-7); gang v (job 1, at queue position 2) held
// from; after the plan gang a (job 2, position 1, ahead of v) or gang
// b (job 3, position 3, behind it) hold the GPUs in owners.
func TestMoveReasonNamesEachTakersGPUs(t *testing.T) {
	s, err := New(themisCfg(), fake.NewSimpleClientset(), slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	const migrated = "migrated by the themis placement from n0 GPUs 0,1,2,3 to n1 GPUs 0,1,2,3 (expected slowdown 1 on the old GPUs, 1 on the new)"
	for _, tc := range []struct {
		name     string
		kind     round.Kind
		from, to []int
		owners   map[int][]int // job id -> GPUs after the plan
		want     string
	}{
		{"one gang ahead takes all", round.Preempt, []int{0, 1, 2, 3}, nil, map[int][]int{2: {0, 1, 2, 3}},
			"preempted at queue position 2 under themis: its n0 GPUs 0,1,2,3 go to gang ns/a, ordered ahead of it"},
		{"one gang ahead takes half, half free", round.Preempt, []int{0, 1, 2, 3}, nil, map[int][]int{2: {0, 1}},
			"preempted at queue position 2 under themis: its n0 GPUs 0,1 go to gang ns/a, ordered ahead of it; its n0 GPUs 2,3 stay free"},
		{"one gang behind takes all", round.Preempt, []int{0, 1, 2, 3}, nil, map[int][]int{3: {0, 1, 2, 3}},
			"preempted at queue position 2 under themis: the themis placement re-planned the round, gave its n0 GPUs 0,1,2,3 to gang ns/b and left no GPUs for it"},
		{"two gangs split them, one GPU free", round.Preempt, []int{2, 3, 4, 5}, nil, map[int][]int{2: {2, 3}, 3: {4}},
			"preempted at queue position 2 under themis: the themis placement re-planned the round, gave its n0 GPUs 2,3 to gang ns/a and its n1 GPU 0 to gang ns/b, and left no GPUs for it; its n1 GPU 1 stays free"},
		{"none takes them", round.Preempt, []int{0, 1, 2, 3}, nil, nil,
			"preempted at queue position 2 under themis: the themis placement left it out of the round's plan"},
		{"migrated, one gang takes all", round.Migrate, []int{0, 1, 2, 3}, []int{4, 5, 6, 7}, map[int][]int{2: {0, 1, 2, 3}},
			migrated + "; its old GPUs go to gang ns/a"},
		{"migrated, two gangs and a free GPU", round.Migrate, []int{0, 1, 2, 3}, []int{4, 5, 6, 7}, map[int][]int{2: {0}, 3: {1, 2}},
			migrated + "; its old n0 GPU 0 goes to gang ns/a and its old n0 GPUs 1,2 to gang ns/b; its old n0 GPU 3 stays free"},
		{"migrated, old GPUs free", round.Migrate, []int{0, 1, 2, 3}, []int{4, 5, 6, 7}, nil, migrated},
		{"migrated, keeping two of them", round.Migrate, []int{0, 1, 2, 3}, []int{2, 3, 4, 5}, map[int][]int{2: {0, 1}},
			"migrated by the themis placement from n0 GPUs 0,1,2,3 to n0 GPUs 2,3 and n1 GPUs 0,1 (expected slowdown 1 on the old GPUs, " +
				fmtFloat(s.cfg.LocalityPenalty) + " on the new); its old n0 GPUs 0,1 go to gang ns/a"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cl, err := cluster.New(2, 4)
			if err != nil {
				t.Fatal(err)
			}
			v := &workload.Job{Spec: workload.Spec{ID: 1, GPUs: 4}}
			if tc.to != nil {
				if err := cl.Assign(1, tc.to); err != nil {
					t.Fatal(err)
				}
			}
			for id, g := range tc.owners {
				if err := cl.Assign(id, g); err != nil {
					t.Fatal(err)
				}
			}
			snap := &snapshot{Cluster: cl, NodeNames: []string{"n0", "n1"}, NodeIndex: map[string]int{"n0": 0, "n1": 1}, First: []int{0, 4}}
			byID := map[int]*gang{1: {Key: "ns/v"}, 2: {Key: "ns/a"}, 3: {Key: "ns/b"}}
			pos := map[int]int{2: 0, 1: 1, 3: 2}
			d := round.Decision{Index: 1, Job: v, Kind: tc.kind, From: tc.from, To: tc.to}
			if got := s.reason(snap, d, byID, pos); got != tc.want {
				t.Errorf("reason:\n got %s\nwant %s", got, tc.want)
			}
		})
	}
}
