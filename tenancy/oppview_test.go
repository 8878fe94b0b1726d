package tenancy

import "testing"

// An opportunistic decision reads its chain's sorted view from a memo
// (oppView) while nothing it reads changed: every change between two
// decisions (a placement, a release, a node going bad) is seen by the
// next one, on two 4-GPU nodes, VCs A and B one node each. The memo's
// own check (checkOppViews) is off here: the decisions themselves must
// tell a stale view.
//  1. o1 (1 GPU) takes n0[0], o2 (4 GPUs) n1; o3 and o4 (4 GPUs) wait,
//     the second from the view the first made.
//  2. o1 leaves: o5 (4 GPUs) fits n0.
//  3. o2 leaves: o6 and o7 (1 GPU each) take n1[0] and n1[1].
//  4. n1 goes bad: o8 (1 GPU) waits rather than take n1[2].
//  5. n1 is good again: o9 (1 GPU) takes n1[2].
func TestOppViewFollowsChanges(t *testing.T) {
	defer func(on bool) { checkOppViews = on }(checkOppViews)
	checkOppViews = false
	s := mustNew(t, twoLevel(2, 4, oneNodeEach))
	place := placer(t, s)
	opp := func(g string, gpus int) Request {
		return Request{Group: g, VC: "A", Priority: Opportunistic, Pods: []int{gpus}}
	}
	place(opp("o1", 1), "n0[0]")
	place(opp("o2", 4), "n1[0 1 2 3]")
	place(opp("o3", 4), "wait: chain NODE: insufficient capacity")
	place(opp("o4", 4), "wait: chain NODE: insufficient capacity")
	must(t, s.Release("o1"))
	place(opp("o5", 4), "n0[0 1 2 3]")
	must(t, s.Release("o2"))
	place(opp("o6", 1), "n1[0]")
	place(opp("o7", 1), "n1[1]")
	must(t, s.SetNodeHealth("n1", false))
	place(opp("o8", 1), "wait: chain NODE: only bad nodes have room")
	must(t, s.SetNodeHealth("n1", true))
	place(opp("o9", 1), "n1[2]")
}
