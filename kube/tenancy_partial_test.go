package kube

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// partialCells: four 4-GPU nodes, three in the cells (n0-n2); VC A two
// node cells, B one. partialAfter takes n1 out of the cells and puts n3
// in.
var partialCells = nodeCells(3, 2, 1)

var partialAfter = strings.Replace(partialCells, "cellAddress: n1}", "cellAddress: n3}", 1)

// gb is the pods bound once partialDrop has run.
const gb = "ns/b@n0[0,1,2,3] ns/g-0@n1[0,1,2,3] ns/g-1@n2[0,1,2,3]"

// partialDrop binds b (B, 4 GPUs) on n0 and gang g (A, two pods of 4
// GPUs) on n1 and n2, then takes n1 out of the cells (partialAfter),
// which changes no pod.
func partialDrop(w *world, at *time.Time, step func(what, want string)) {
	w.t.Helper()
	w.create("b", 4, vcAnn("B", ""), *at)
	step("b", "ns/b@n0[0,1,2,3]")
	for _, p := range []string{"g-0", "g-1"} {
		w.create(p, 4, gangAnn("g", 2, AnnVC, "A"), *at)
	}
	step("g", gb)
	w.setCells(w.s.cfg, partialAfter)
	step("the change", gb)
}

// A cells change removes one of the two nodes a running 2-pod gang of A
// runs on. Nodes n0-n3 of 4 GPUs; the cells n0-n2 (A two node cells, B
// one), then n0, n2 and n3.
//
//  1. b (B, 4 GPUs) binds first: B's cell takes n0. Gang g (A, two pods
//     of 4 GPUs) binds n1 and n2.
//  2. The change takes n1 out of the cells: g keeps A's cell over n2 (the
//     devices the new cells still have, as HiveD re-reads a pod whose
//     node left its config), and its pod on n1 runs on outside the cells.
//     The cells hold g on n2 alone, nothing else.
//  3. a (A, 4 GPUs) binds A's other cell, the new node n3; o
//     (opportunistic, 4 GPUs) finds no free cell and waits: n1 is not
//     the cells', n0, n2 and n3 are taken.
//  4. b ends: o binds n0, B's cell, as opportunistic.
//  5. g ends: its cell over n2 is free again; a2 (A, 4 GPUs) binds it.
//     The cells hold a, a2 and o, nothing of g.
func TestTenancyCellsDropOneNodeOfAGang(t *testing.T) {
	w, at := partialWorld(t)
	step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
	checkCells := func(what string, want ...string) {
		t.Helper()
		if err := w.s.ten.hived.Check(); err != nil {
			t.Fatalf("%s: cells: %v", what, err)
		}
		if got := groupsOn(w); got != strings.Join(want, " ") {
			t.Fatalf("%s: the cells hold %s, want %s\n%s", what, got, strings.Join(want, " "), w.log.String())
		}
	}
	partialDrop(w, at, step)
	if got := w.log.String(); !strings.Contains(got, "kept pod ns/b, gang ns/g;") || !strings.Contains(got, "devices no longer in the cells n1/0, n1/1, n1/2, n1/3") {
		t.Fatalf("the change is not in the log as kept with n1 dropped:\n%s", got)
	}
	checkCells("the change", "b:n0/0,1,2,3", "g:n2/0,1,2,3")
	w.create("a", 4, vcAnn("A", ""), *at)
	w.create("o", 4, vcAnn("A", "-1"), *at)
	const gba = "ns/a@n3[0,1,2,3] ns/b@n0[0,1,2,3] ns/g-0@n1[0,1,2,3] ns/g-1@n2[0,1,2,3]"
	for r := range 3 {
		step(fmt.Sprintf("a and o, round %d", r), gba)
	}
	checkCells("a and o", "a:n3/0,1,2,3", "b:n0/0,1,2,3", "g:n2/0,1,2,3")
	w.finish("ns/b")
	step("b ends", "ns/a@n3[0,1,2,3] ns/g-0@n1[0,1,2,3] ns/g-1@n2[0,1,2,3] ns/o@n0[0,1,2,3]")
	w.finish("ns/g-0")
	w.finish("ns/g-1")
	w.create("a2", 4, vcAnn("A", ""), *at)
	step("g ends", "ns/a2@n2[0,1,2,3] ns/a@n3[0,1,2,3] ns/o@n0[0,1,2,3]")
	checkCells("g ends", "a2:n2/0,1,2,3", "a:n3/0,1,2,3", "o:n0/0,1,2,3")
}

// partialWorld is the world of TestTenancyCellsDropOneNodeOfAGang:
// nodes n0-n3 of 4 GPUs under hived with partialCells in force, watched
// through the cells ConfigMap.
func partialWorld(t *testing.T) (*world, *time.Time) {
	return hivedWorld(t, cellsFile(t, partialCells), 4, withCellsConfigMap)
}

// groupsOn renders the cells' groups as gang:node/devices (each pod's),
// sorted; a gang is named as its pods' gang or its one pod.
func groupsOn(w *world) string {
	c := w.s.ten.hived.Cells()
	names := map[string]string{}
	for j, g := range w.s.byJob {
		names[strconv.Itoa(j.ID)] = strings.TrimPrefix(strings.TrimPrefix(g.Key, "ns/"), "pod:")
	}
	var out []string
	for _, g := range c.Groups() {
		ps, _ := c.Placement(g)
		n := names[g]
		if n == "" {
			n = "job " + g
		}
		var on []string
		for _, p := range ps {
			on = append(on, fmt.Sprintf("%s/%s", p.Node, FormatIndices(p.GPUs)))
		}
		out = append(out, n+":"+strings.Join(on, "+"))
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

// The random rounds of TestTenancyRandomRounds with the cells ConfigMap
// taking n1 out of the cells and putting it back every 25 rounds: gangs
// of two pods on n1 and another node lose part of their GPUs to the
// change while they run.
func TestTenancyRandomRoundsDropNode(t *testing.T) {
	alt := strings.Replace(randomCells, "  - {cellType: NODE, cellAddress: n1}\n", "", 1)
	t.Run("fifo-las-srtf", func(t *testing.T) { randomTenancyRounds(t, randomCells, alt, nil) })
	t.Run("themis", func(t *testing.T) { randomTenancyRoundsUnder(t, "themis", randomCells, alt, nil) })
}

// The change of TestTenancyCellsDropOneNodeOfAGang undone while g still
// runs: n1 comes back into the cells under g-0.
//
//  1. b (B) on n0, gang g (A) on n1 and n2, as there; n1 leaves the
//     cells (g keeps A's cell over n2) and comes back.
//  2. The cells take g in again whole, on n1 and n2: A's two cells.
//  3. a (A, 4 GPUs) waits, A's cells full; b ends and b2 (B, 4 GPUs)
//     binds n0 in the same round.
//  4. g ends: a binds A's cells.
//
// Before, a change carried g with its n2 devices only, n1 came back free
// in the cells, and they bound a to n1 under g-0: the round refused the
// whole answer ("placer answer rejected; nothing bound this round"),
// every round until g ended, so b2 waited beside B's free cell too.
func TestTenancyCellsNodeComesBackUnderAGang(t *testing.T) {
	w, at := partialWorld(t)
	step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
	checkCells := func(what, want string) {
		t.Helper()
		if err := w.s.ten.hived.Check(); err != nil {
			t.Fatalf("%s: cells: %v", what, err)
		}
		if got := groupsOn(w); got != want {
			t.Fatalf("%s: the cells hold %s, want %s\n%s", what, got, want, w.log.String())
		}
	}
	partialDrop(w, at, step)
	checkCells("the change", "b:n0/0,1,2,3 g:n2/0,1,2,3")
	w.setCells(w.s.cfg, partialCells)
	step("the change undone", gb)
	checkCells("the change undone", "b:n0/0,1,2,3 g:n1/0,1,2,3+n2/0,1,2,3")
	w.create("a", 4, vcAnn("A", ""), *at)
	step("a", gb)
	if l := w.log.String(); strings.Contains(l, "nothing bound this round") {
		t.Fatalf("a: the round refused the cells' answer:\n%s", l)
	}
	w.finish("ns/b")
	w.create("b2", 4, vcAnn("B", ""), *at)
	step("b ends, b2", "ns/b2@n0[0,1,2,3] ns/g-0@n1[0,1,2,3] ns/g-1@n2[0,1,2,3]")
	checkCells("b2", "b2:n0/0,1,2,3 g:n1/0,1,2,3+n2/0,1,2,3")
	w.finish("ns/g-0")
	w.finish("ns/g-1")
	step("g ends", "ns/a@n1[0,1,2,3] ns/b2@n0[0,1,2,3]")
	checkCells("g ends", "a:n1/0,1,2,3 b2:n0/0,1,2,3")
	if l := w.log.String(); strings.Contains(l, "level=ERROR") {
		t.Fatalf("an error in the log:\n%s", l)
	}
}

// The change of TestTenancyCellsDropOneNodeOfAGang, then a restart: the
// fresh scheduler takes g in again on n2, as the change had left it (its
// pod on n1 runs on outside the cells), so a (A) binds A's other cell,
// n3, at once.
func TestTenancyRestartKeepsPartlyDroppedGang(t *testing.T) {
	w, at := partialWorld(t)
	step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
	partialDrop(w, at, step)
	w.restart()
	w.setCells(w.s.cfg, partialAfter)
	step("the restart", gb)
	if got, want := groupsOn(w), "b:n0/0,1,2,3 g:n2/0,1,2,3"; got != want {
		t.Fatalf("after the restart the cells hold %s, want %s\n%s", got, want, w.log.String())
	}
	w.create("a", 4, vcAnn("A", ""), *at)
	step("a", "ns/a@n3[0,1,2,3] "+gb)
	w.create("a2", 4, vcAnn("A", ""), *at)
	step("a2", "ns/a@n3[0,1,2,3] "+gb)
	if why := w.s.lastWhy["ns/pod:a2"]; !strings.HasSuffix(why, "VC A's cells cannot hold it: 0 of their 8 GPUs free") {
		t.Errorf("a2 waits with %q", why)
	}
}

// shrinkCells: four 4-GPU nodes n0-n3 in the cells, VC A two node cells,
// B two. shrinkAfter takes n0 out of the cells and A down to one cell.
var shrinkCells = nodeCells(4, 2, 2)

var shrinkAfter = strings.Replace(strings.Replace(shrinkCells, "  - {cellType: NODE, cellAddress: n0}\n", "", 1),
	"A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}", "A: {virtualCells: [{cellType: NODE, cellNumber: 1}]}", 1)

// An operator changes the cells ConfigMap alone (the cells file stays the
// first config), the change leaves part of a running gang outside the
// cells and its VC too small for it whole, and the scheduler restarts.
// Nodes n0-n3 of 4 GPUs; the cells file and the ConfigMap at first give
// VC A two node cells and B two; the change takes n0 out and A down to
// one cell.
//
//  1. Gang a (A, two pods of 4 GPUs) binds n0 and n1, gang b (B, the
//     same) n2 and n3.
//  2. The change keeps a on A's one cell over n1 (its pod on n0 runs on
//     outside the cells) and b. a2 (A, 4 GPUs) waits: A's cells hold a.
//  3. The scheduler restarts (or does not: the same steps follow). The
//     restarted one takes the ConfigMap's cells as those in force, takes
//     b and a in under them (a guaranteed on n1, as the change kept it),
//     and a2 waits naming A's cells, as before the restart.
//  4. a ends: a2 binds A's cell, n1.
//
// Before, the restarted scheduler built the cells file's cells, applied
// the ConfigMap's as a change under no gang ("kept none"), and left a out
// of its round (A's cells cannot hold 8 GPUs: admit refused it), so it
// never took a in: the cells held b alone, and a2 waited with "0 GPUs
// free" and no reason (found by an operator trial on kwok).
func TestTenancyRestartConfigMapOnlyChange(t *testing.T) {
	const ab = "ns/a-0@n0[0,1,2,3] ns/a-1@n1[0,1,2,3] ns/b-0@n2[0,1,2,3] ns/b-1@n3[0,1,2,3]"
	const cells = "a:n1/0,1,2,3 b:n2/0,1,2,3+n3/0,1,2,3"
	const why = "VC A's cells cannot hold it: 0 of their 4 GPUs free"
	var states []string
	for _, restart := range []bool{false, true} {
		t.Run(fmt.Sprint("restart=", restart), func(t *testing.T) {
			w, at := hivedWorld(t, cellsFile(t, shrinkCells), 4, withCellsConfigMap)
			step := func(what, want string) { t.Helper(); w.expect(at, what, want) }
			check := func(what string) {
				t.Helper()
				if err := w.s.ten.hived.Check(); err != nil {
					t.Fatalf("%s: cells: %v", what, err)
				}
				if got := groupsOn(w); got != cells {
					t.Fatalf("%s: the cells hold %s, want %s\n%s", what, got, cells, w.log.String())
				}
				if got := w.s.lastWhy["ns/pod:a2"]; !strings.HasSuffix(got, why) {
					t.Fatalf("%s: a2 waits with %q, want it to end %q\n%s", what, got, why, w.log.String())
				}
			}
			for _, g := range []struct{ name, vc, want string }{
				{"a", "A", "ns/a-0@n0[0,1,2,3] ns/a-1@n1[0,1,2,3]"},
				{"b", "B", ab},
			} {
				for _, p := range []string{g.name + "-0", g.name + "-1"} {
					w.create(p, 4, gangAnn(g.name, 2, AnnVC, g.vc), *at)
				}
				step(g.name, g.want)
			}
			w.setCells(w.s.cfg, shrinkAfter)
			step("the change", ab)
			w.create("a2", 4, vcAnn("A", ""), *at)
			step("a2", ab)
			check("the change")
			if restart {
				w.restart()
				w.setCells(w.s.cfg, shrinkAfter)
				step("the restart", ab)
				check("the restart")
				l := w.log.String()
				if i := strings.LastIndex(l, "in force from the start"); i < 0 || strings.Contains(l[i:], "applied under the running gangs") {
					t.Fatalf("the restart applied the ConfigMap as a change under the running gangs:\n%s", l)
				}
				if !strings.Contains(l, `msg="tenancy: running gang taken into the cells" gang="gang ns/a" vc=A as=guaranteed`) {
					t.Fatalf("the restart did not take a in as guaranteed:\n%s", l)
				}
			}
			step("a round on", ab)
			check("a round on")
			states = append(states, groupsOn(w)+" | "+w.s.lastWhy["ns/pod:a2"])
			w.finish("ns/a-0")
			w.finish("ns/a-1")
			step("a ends", "ns/a2@n1[0,1,2,3] ns/b-0@n2[0,1,2,3] ns/b-1@n3[0,1,2,3]")
			if got, want := groupsOn(w), "a2:n1/0,1,2,3 b:n2/0,1,2,3+n3/0,1,2,3"; got != want {
				t.Fatalf("a ends: the cells hold %s, want %s\n%s", got, want, w.log.String())
			}
		})
	}
	if len(states) == 2 && states[0] != states[1] {
		t.Errorf("restarted: %s\nran on:    %s", states[1], states[0])
	}
}
