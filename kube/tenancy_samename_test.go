package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// terminate marks a bound pod as being deleted (a delete with a grace
// period, or a StatefulSet's rolling restart): it still holds its GPUs.
func (w *world) terminate(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if p := w.pods[key]; p != nil && p.DeletionTimestamp == nil {
		q := p.DeepCopy()
		now := metav1.Now()
		q.DeletionTimestamp = &now
		w.put(q)
	}
}

// remake deletes pod key for good and makes it again, pending, under the
// same name, as its controller would (recreate): the scheduler sees both
// in the same delivery, before its next round.
func (w *world) remake(key string) {
	w.t.Helper()
	w.mu.Lock()
	old := w.pods[key]
	w.mu.Unlock()
	if old == nil {
		w.t.Fatalf("remake: no pod %s", key)
	}
	w.remove(key)
	w.recreate(old)
}

// cellsAre fails the test unless the cells pass their invariant check
// and hold exactly want (groupsOn's form); demoted, when given, names
// the groups held lazily preempted (demotedOn's form).
func cellsAre(t *testing.T, w *world, what, want string, demoted ...string) {
	t.Helper()
	if err := w.s.ten.hived.Check(); err != nil {
		t.Fatalf("%s: cells: %v\n%s", what, err, w.log.String())
	}
	if got := groupsOn(w); got != want {
		t.Fatalf("%s: the cells hold %s, want %s\n%s", what, got, want, w.log.String())
	}
	if got := demotedOn(w); len(demoted) > 0 && got != demoted[0] {
		t.Fatalf("%s: the cells hold %q lazily preempted, want %q\n%s", what, got, demoted[0], w.log.String())
	}
}

// demotedOn names the gangs the cells hold lazily preempted, sorted.
func demotedOn(w *world) string {
	var out []string
	c := w.s.ten.hived.Cells()
	for j, g := range w.s.byJob {
		if _, demoted, ok := c.GroupInfo(strconv.Itoa(j.ID)); ok && demoted {
			out = append(out, strings.TrimPrefix(strings.TrimPrefix(g.Key, "ns/"), "pod:"))
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// A running gang that is no preemption victim has its pods deleted and
// made again under the same names (a StatefulSet's pods recreated). It
// holds its cells while any of its old pods still runs; once they are
// all gone its new pods are a new gang for the cells, placed afresh in
// that same round. Nodes n0-n2 of 4 GPUs; VC A two node cells, B one
// (fifo, hived).
//
//  1. g (A, two pods of 4 GPUs) binds n0 and n1, b (B, 4 GPUs) n2; a (A,
//     4 GPUs) waits, A's cells full.
//  2. Both of g's pods are being deleted: g holds A's cells, a waits.
//  3. g-0 is gone and made again while g-1 still terminates: g still
//     holds A's cells (g-1 runs on n1), g-0 waits, a waits.
//  4. g-1 is gone and made again: g's old pods are all gone; g, first in
//     line, binds A's two cells in the same round; a waits, naming A's
//     cells.
//  5. g ends: a binds A's cell.
//
// Every step checks the cells' invariants and exactly what they hold,
// and that no GPU is given twice (world.step).
func TestTenancyRunningGangRebornUnderSameName(t *testing.T) {
	w, at := hivedWorld(t, cellsFile(t, nodeCells(3, 2, 1)), 3)
	step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
	for _, p := range []string{"g-0", "g-1"} {
		w.create(p, 4, gangAnn("g", 2, AnnVC, "A"), *at)
	}
	w.create("b", 4, vcAnn("B", ""), *at)
	const gb = "ns/b@n2[0,1,2,3] ns/g-0@n0[0,1,2,3] ns/g-1@n1[0,1,2,3]"
	const cells = "b:n2/0,1,2,3 g:n0/0,1,2,3+n1/0,1,2,3"
	step("g and b", gb)
	w.create("a", 4, vcAnn("A", ""), *at)
	step("a", gb)
	cellsAre(t, w, "a", cells)
	w.terminate("ns/g-0")
	w.terminate("ns/g-1")
	step("g's pods deleted", gb)
	cellsAre(t, w, "g's pods deleted", cells)
	w.remake("ns/g-0")
	for r := range 2 {
		what := fmt.Sprint("g-0 made again, round ", r)
		step(what, "ns/b@n2[0,1,2,3] ns/g-1@n1[0,1,2,3]")
		cellsAre(t, w, what, cells)
	}
	w.remake("ns/g-1")
	step("g-1 made again", gb)
	cellsAre(t, w, "g-1 made again", cells)
	const why = "VC A's cells cannot hold it: 0 of their 8 GPUs free"
	if got := w.s.lastWhy["ns/pod:a"]; !strings.HasSuffix(got, why) {
		t.Fatalf("a waits with %q, want it to end %q", got, why)
	}
	w.finish("ns/g-0")
	w.finish("ns/g-1")
	step("g ends", "ns/a@n0[0,1,2,3] ns/b@n2[0,1,2,3]")
	cellsAre(t, w, "g ends", "a:n0/0,1,2,3 b:n2/0,1,2,3")
}

// A preempted gang of two pods is made again in part: its controller
// makes o-0 again, under its name, while o-1 is still being deleted. The
// gang leaves the cells only once every evicted pod is gone; until then
// its preemptor waits, and the new o-0 waits too. One 4-GPU node, VC B
// one node cell (fifo, packed-sticky, hived).
//
//  1. o (B, opportunistic, two pods of 2 GPUs) binds n0; b1 (B, 4 GPUs)
//     preempts it: both pods are evicted.
//  2. o-0 is gone and made again; o-1 still terminates on GPUs 2-3: for
//     two rounds nothing binds (b1 would share o-1's GPUs), the cells
//     hold o, leaving, and b1's reservation.
//  3. o-1 is gone and made again: b1 binds the node in that round; o
//     waits.
//  4. b1 ends: o binds again.
func TestTenancyVictimGangRebornInPart(t *testing.T) {
	w, at := oneNodeBWorld(t)
	step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
	for _, p := range []string{"o-0", "o-1"} {
		w.create(p, 2, gangAnn("o", 2, AnnVC, "B", AnnPriority, "-1"), *at)
	}
	const o = "ns/o-0@n0[0,1] ns/o-1@n0[2,3]"
	step("o", o)
	cellsAre(t, w, "o", "o:n0/0,1+n0/2,3")
	w.create("b1", 4, vcAnn("B", ""), *at)
	step("b1 preempts o", o)
	if d := w.deleting(); len(d) != 2 || d[0].Name != "o-0" || d[1].Name != "o-1" {
		t.Fatalf("being deleted: %v, want o-0 and o-1", d)
	}
	w.remake("ns/o-0")
	for r := range 2 {
		what := fmt.Sprint("o-0 made again, round ", r)
		step(what, "ns/o-1@n0[2,3]")
		cellsAre(t, w, what, "b1:n0/0,1,2,3 o:n0/0,1+n0/2,3")
		if pre := w.s.ten.hived.Cells().Preempting(); len(pre) != 1 {
			t.Fatalf("%s: preempting %v, want b1 alone", what, pre)
		}
	}
	w.remake("ns/o-1")
	step("o-1 made again", "ns/b1@n0[0,1,2,3]")
	cellsAre(t, w, "o-1 made again", "b1:n0/0,1,2,3")
	step("o waits", "ns/b1@n0[0,1,2,3]")
	w.finish("ns/b1")
	step("b1 ends", o)
	cellsAre(t, w, "b1 ends", "o:n0/0,1+n0/2,3")
}

// shrinkA: three 4-GPU nodes in the cells, VC A two node cells, B one;
// shrinkA1 gives A one node cell and B two.
var (
	shrinkA  = nodeCells(3, 2, 1)
	shrinkA1 = nodeCells(3, 1, 2)
)

// VC A shrinks under two running gangs of A, one cell for two, and the
// scheduler either runs on (the cells ConfigMap changes while it runs)
// or restarts with the shrunk cells (the ConfigMap changed while it was
// down). Both ways keep the gang that started first, z, guaranteed on
// A's one cell, and the later one, a, lazily preempted, whatever their
// names: b2 (B, 4 GPUs) then takes B's second cell over a's node and
// evicts a, not z. Nodes n0-n2 of 4 GPUs (fifo, hived).
//
//  1. z (A, 4 GPUs) binds n0; a round later a (A, 4 GPUs) binds n1, b
//     (B, 4 GPUs) n2.
//  2. The change (or the restart under it): the cells hold z guaranteed,
//     a lazily preempted, and b.
//  3. b2 (B) arrives: a is evicted; once its pod is gone b2 binds n1.
//
// Before, a restart took the running gangs in guaranteed first, then by
// first start, but a restarted scheduler sees every gang start at its
// first round: the tie fell to the gangs' names, so a (named first) kept
// A's cell, z was demoted, and b2 evicted z, the older work, where the
// scheduler that ran on evicted a.
func TestTenancyShrunkVCKeepsFirstStarted(t *testing.T) {
	var got []string
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprint("restart=", restart), func(t *testing.T) {
			w, at := hivedWorld(t, cellsFile(t, shrinkA), 3, withCellsConfigMap)
			step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
			w.create("z", 4, vcAnn("A", ""), *at)
			step("z", "ns/z@n0[0,1,2,3]")
			w.create("a", 4, vcAnn("A", ""), *at)
			w.create("b", 4, vcAnn("B", ""), *at)
			const all = "ns/a@n1[0,1,2,3] ns/b@n2[0,1,2,3] ns/z@n0[0,1,2,3]"
			step("a and b", all)
			cellsAre(t, w, "a and b", "a:n1/0,1,2,3 b:n2/0,1,2,3 z:n0/0,1,2,3", "")
			if restart {
				w.restart()
			}
			w.setCells(w.s.cfg, shrinkA1)
			step("the change", all)
			cellsAre(t, w, "the change", "a:n1/0,1,2,3 b:n2/0,1,2,3 z:n0/0,1,2,3", "a")
			w.create("b2", 4, vcAnn("B", ""), *at)
			step("b2", all)
			var d []string
			for _, p := range w.deleting() {
				d = append(d, p.Name)
			}
			got = append(got, strings.Join(d, " "))
			if len(d) != 1 || d[0] != "a" {
				t.Fatalf("b2: being deleted %v, want a\n%s", d, w.log.String())
			}
			w.remove("ns/a")
			step("a gone", "ns/b2@n1[0,1,2,3] ns/b@n2[0,1,2,3] ns/z@n0[0,1,2,3]")
			cellsAre(t, w, "a gone", "b2:n1/0,1,2,3 b:n2/0,1,2,3 z:n0/0,1,2,3", "")
		})
	}
	if len(got) == 2 && got[0] != got[1] {
		t.Errorf("evicted for b2: %q when the scheduler runs on, %q after a restart", got[0], got[1])
	}
}
