package kube

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Random rounds under hived on six 4-GPU nodes (VC A two node cells, B
// two, C a pinned node; one node spare): gangs of 1-2 pods of 1-4 GPUs
// of a random VC and priority (guaranteed or opportunistic), one in five
// of bare pods (never evicted), one in two with a node selector (the
// nodes are in two zones), arrive, run
// a few rounds and finish, evicted pods come back, and now and then the
// scheduler restarts; on odd seeds gangs have pod priorities. After every round no GPU is given twice, no round
// fails, and the cells' invariants hold. TENANCY_WORLD_SEEDS=1 runs 40
// seeds of 200 rounds; TENANCY_WORLD_LOG=FILE keeps a failing run's log.
// The rounds run under fifo, las and srtf (by seed), and again under
// themis, where each VC runs its own Themis; no VC's policy may break an
// invariant (it logs an error), and restarts make them afresh.
func TestTenancyRandomRounds(t *testing.T) {
	t.Run("fifo-las-srtf", func(t *testing.T) { randomTenancyRounds(t, randomCells, "", nil) })
	t.Run("themis", func(t *testing.T) { randomTenancyRoundsUnder(t, "themis", randomCells, "", nil) })
}

// The same on two leaf types (V100 n0-n2; K80 n3-n4 and a pinned n5),
// VC A holding a cell of each: gangs name a leaf type or none, and every
// 25 rounds the cells ConfigMap switches A between one V100 and one K80
// cell and two V100 cells. Under fifo, las and srtf, and under themis.
func TestTenancyRandomRoundsTwoTypes(t *testing.T) {
	alt := strings.Replace(twoTypeCells,
		"A: {virtualCells: [{cellType: V100-NODE, cellNumber: 1}, {cellType: K80-NODE, cellNumber: 1}]}",
		"A: {virtualCells: [{cellType: V100-NODE, cellNumber: 2}]}", 1)
	types := []string{"", "V100", "K80"}
	t.Run("fifo-las-srtf", func(t *testing.T) { randomTenancyRounds(t, twoTypeCells, alt, types) })
	t.Run("themis", func(t *testing.T) { randomTenancyRoundsUnder(t, "themis", twoTypeCells, alt, types) })
}

const twoTypeCells = `physicalCluster:
  cellTypes:
    V100-NODE: {childCellType: V100, childCellNumber: 4, isNodeLevel: true}
    K80-NODE: {childCellType: K80, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: V100-NODE, cellAddress: n0}
  - {cellType: V100-NODE, cellAddress: n1}
  - {cellType: V100-NODE, cellAddress: n2}
  - {cellType: K80-NODE, cellAddress: n3}
  - {cellType: K80-NODE, cellAddress: n4}
  - {cellType: K80-NODE, cellAddress: n5, pinnedCellId: C-PIN}
virtualClusters:
  A: {virtualCells: [{cellType: V100-NODE, cellNumber: 1}, {cellType: K80-NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: V100-NODE, cellNumber: 1}]}
  C: {pinnedCells: [{pinnedCellId: C-PIN}]}
`

const randomCells = `physicalCluster:
  cellTypes:
    NODE: {childCellType: GPU, childCellNumber: 4, isNodeLevel: true}
  physicalCells:
  - {cellType: NODE, cellAddress: n0}
  - {cellType: NODE, cellAddress: n1}
  - {cellType: NODE, cellAddress: n2}
  - {cellType: NODE, cellAddress: n3}
  - {cellType: NODE, cellAddress: n4}
  - {cellType: NODE, cellAddress: n5, pinnedCellId: C-PIN}
virtualClusters:
  A: {virtualCells: [{cellType: NODE, cellNumber: 2}]}
  B: {virtualCells: [{cellType: NODE, cellNumber: 2}]}
  C: {pinnedCells: [{pinnedCellId: C-PIN}]}
`

// randomTenancyRounds runs the random rounds on cells; with alt, the
// cells ConfigMap switches between cells and alt every 25 rounds; gangs
// name one of types as their leaf type (nil: none).
func randomTenancyRounds(t *testing.T, cells, alt string, types []string) {
	randomTenancyRoundsUnder(t, "", cells, alt, types)
}

// randomTenancyRoundsUnder is randomTenancyRounds under scheduler sched
// ("": fifo, las and srtf by seed).
func randomTenancyRoundsUnder(t *testing.T, sched, cells, alt string, types []string) {
	randomTenancyRoundsWith(t, sched, cells, alt, types, false)
}

// randomTenancyRoundsWith is randomTenancyRoundsUnder; with foreign,
// another scheduler's pods come and go on the nodes' free GPUs (see
// otherPods), and no pod of ours may be bound on a GPU they hold.
func randomTenancyRoundsWith(t *testing.T, sched, cells, alt string, types []string, foreign bool) {
	file := filepath.Join(t.TempDir(), "cells.yaml")
	if err := os.WriteFile(file, []byte(cells), 0o644); err != nil {
		t.Fatal(err)
	}
	seeds, rounds := 6, 120
	if os.Getenv("TENANCY_WORLD_SEEDS") != "" {
		seeds, rounds = 40, 200
	}
	if testing.Short() {
		seeds = 2
	}
	for seed := range seeds {
		cfg := testCfg()
		cfg.Scheduler = sched
		if sched == "" {
			cfg.Scheduler = []string{"fifo", "las", "srtf"}[seed%3]
		}
		cfg.Placement = []string{"packed-sticky", "pal-ma", "pal", "packed-nonsticky"}[seed%4]
		cfg.Tenancy, cfg.Cells = []string{"hived", "hived-speed", "hived-pm"}[seed/2%3], file
		if alt != "" {
			cfg.CellsConfigMap = "pal-cells"
		}
		w := newWorld(t, cfg, uint64(seed), 6, 4)
		for i := range 6 {
			w.nodes[fmt.Sprintf("n%d", i)].Labels = map[string]string{"zone": []string{"a", "b"}[i%2]}
		}
		if alt != "" {
			w.setCells(cfg, cells)
		}
		rng := rand.New(rand.NewPCG(uint64(seed), 67))
		fp := otherPods{w: w, rng: rand.New(rand.NewPCG(uint64(seed), 71)), pods: map[string]*otherPod{}}
		// Odd seeds give gangs pod priorities (spec.priority 0, 100 or
		// 1000, one in five under preemptionPolicy: Never), drawn from a
		// stream of their own so that the rest of the world is the same.
		prng := rand.New(rand.NewPCG(uint64(seed), 73))
		var runs lifetimes
		gangs := 0
		t0 := time.Unix(1_700_000_000, 0)
		for r := range rounds {
			at := t0.Add(time.Duration(r) * 10 * time.Second)
			if rng.IntN(3) > 0 {
				gangs++
				vc := []string{"A", "B", "C"}[rng.IntN(3)]
				prio := []string{"", "5", "-1"}[rng.IntN(3)]
				size, gpus := 1+rng.IntN(2), 1+rng.IntN(4)
				bare := rng.IntN(5) == 0                        // no controller: never evicted
				zone := []string{"", "", "a", "b"}[rng.IntN(4)] // a node selector
				if vc == "C" {
					size, prio = 1, "" // a pinned cell is not for opportunistic gangs
				}
				podPrio, never := int32(0), false
				if seed%2 == 1 {
					podPrio, never = []int32{0, 100, 1000}[prng.IntN(3)], prng.IntN(5) == 0
				}
				for i := range size {
					ann := vcAnn(vc, prio)
					ann[AnnModel], ann[AnnIterations] = "BERT", fmt.Sprint(100*(1+rng.IntN(1000)))
					if vc == "C" {
						ann[AnnPinnedCell] = "C-PIN"
					} else if len(types) > 0 {
						if typ := types[gangs%len(types)]; typ != "" && !(vc == "B" && typ == "K80") {
							ann[AnnLeafCellType] = typ
						}
					}
					if size > 1 {
						ann[AnnGang], ann[AnnGangSize] = fmt.Sprintf("g%d", gangs), itoa(size)
					}
					var owners []metav1.OwnerReference
					if bare {
						owners = []metav1.OwnerReference{}
					}
					w.createWith(fmt.Sprintf("g%d-%d", gangs, i), gpus, ann, at, owners)
					w.mu.Lock()
					p := w.pods[fmt.Sprintf("ns/g%d-%d", gangs, i)]
					if zone != "" {
						p.Spec.NodeSelector = map[string]string{"zone": zone}
					}
					if seed%2 == 1 {
						setPriority(p, podPrio, never)
					}
					w.mu.Unlock()
				}
			}
			runs.step(w, rng, r, 10)
			if rng.IntN(15) == 0 {
				w.restart()
				fp.tell() // the new process lists them too
			}
			if foreign {
				fp.step()
			}
			if alt != "" && r%25 == 24 {
				w.setCells(cfg, []string{alt, cells}[r/25%2])
			}
			w.deliver(-1)
			pre := cellsState(w) + "bound " + w.bound()
			w.round(at)
			w.deliver(-1)
			fail := func(err error) {
				l := w.log.String() + "\nbefore the round:\n" + pre
				if f := os.Getenv("TENANCY_WORLD_LOG"); f != "" {
					_ = os.WriteFile(f, []byte(l), 0o644)
				}
				t.Fatalf("seed %d (%s/%s/%s) round %d: %v\n%s", seed, cfg.Scheduler, cfg.Placement, cfg.Tenancy, r, err, l[max(0, len(l)-6000):])
			}
			if err := w.check(); err != nil {
				fail(err)
			}
			if err := fp.check(); err != nil {
				fail(err)
			}
			w.mu.Lock()
			for k, p := range w.pods {
				if z := p.Spec.NodeSelector["zone"]; z != "" && p.Spec.NodeName != "" && w.nodes[p.Spec.NodeName].Labels["zone"] != z {
					w.mu.Unlock()
					fail(fmt.Errorf("pod %s of zone %s bound to %s", k, z, p.Spec.NodeName))
				}
			}
			w.mu.Unlock()
			if err := w.s.ten.hived.Check(); err != nil {
				fail(fmt.Errorf("cells: %v", err))
			}
			if l := w.log.String(); strings.Contains(l, "level=ERROR") {
				fail(fmt.Errorf("an error in the log"))
			}
		}
		t.Logf("seed %d: %d gangs, bound now %d pods", seed, gangs, strings.Count(w.bound(), "@"))
	}
}

// cellsState renders what the cells hold and the scheduler's held gangs,
// for a failing run's log.
func cellsState(w *world) string {
	var b strings.Builder
	if w.s.ten == nil || w.s.ten.hived == nil {
		return ""
	}
	c := w.s.ten.hived.Cells()
	for _, g := range c.Groups() {
		p, _ := c.Placement(g)
		prio, demoted, _ := c.GroupInfo(g)
		fmt.Fprintf(&b, "group %s priority %d demoted %v on %v\n", g, prio, demoted, p)
	}
	for _, id := range slices.Sorted(maps.Keys(w.s.ten.held)) {
		j := w.s.ten.held[id]
		fmt.Fprintf(&b, "held %d: %s VC %s priority %d GPUs %v\n", id, w.s.byJob[j].Key, j.VC, j.VCPriority, j.GPUsHeld)
	}
	return b.String()
}

// Random rounds as TestTenancyRandomRounds's, with another scheduler's
// pods coming and going on free GPUs of the nodes (named by index or
// held by count): no pod of ours is bound on a GPU they hold, no round
// fails, and the cells' invariants hold. Under fifo, las and srtf, on
// randomCells and on twoTypeCells with its cells changes.
func TestTenancyRandomRoundsForeign(t *testing.T) {
	t.Run("one-type", func(t *testing.T) { randomTenancyRoundsWith(t, "", randomCells, "", nil, true) })
	alt := strings.Replace(twoTypeCells,
		"A: {virtualCells: [{cellType: V100-NODE, cellNumber: 1}, {cellType: K80-NODE, cellNumber: 1}]}",
		"A: {virtualCells: [{cellType: V100-NODE, cellNumber: 2}]}", 1)
	t.Run("two-types", func(t *testing.T) {
		randomTenancyRoundsWith(t, "", twoTypeCells, alt, []string{"", "V100", "K80"}, true)
	})
}

// otherPods are another scheduler's running pods in a world of 4-GPU
// nodes, told to its scheduler's Store directly (the world's pods are
// ours).
type otherPods struct {
	w    *world
	rng  *rand.Rand
	pods map[string]*otherPod // by namespace/name
	n    int
}

type otherPod struct {
	p     *corev1.Pod
	node  string
	named []int // the devices it names; nil: it holds gpus by count
	gpus  int
}

// ours is, on each node, the devices our bound pods hold and how many.
func (f *otherPods) ours() map[string][]int {
	f.w.mu.Lock()
	defer f.w.mu.Unlock()
	out := map[string][]int{}
	for _, p := range f.w.pods {
		if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		idx, _ := ParseIndices(p.Annotations[AnnGPUIndices])
		out[p.Spec.NodeName] = append(out[p.Spec.NodeName], idx...)
	}
	return out
}

// step starts, now and then, a pod of 1 or 2 GPUs on a node's free
// devices (named, or by count), and ends one.
func (f *otherPods) step() {
	if f.rng.IntN(3) == 0 {
		node := fmt.Sprintf("n%d", f.rng.IntN(6))
		taken := map[int]bool{}
		for _, x := range f.ours()[node] {
			taken[x] = true
		}
		counted := 0
		for _, p := range f.pods {
			if p.node != node {
				continue
			}
			for _, x := range p.named {
				taken[x] = true
			}
			if p.named == nil {
				counted += p.gpus
			}
		}
		var free []int
		for x := range 4 {
			if !taken[x] {
				free = append(free, x)
			}
		}
		gpus := 1 + f.rng.IntN(2)
		if len(free)-counted >= gpus {
			f.n++
			fp := &otherPod{node: node, gpus: gpus}
			var ann map[string]string
			if f.rng.IntN(2) == 0 {
				// Named: devices no counted pod can hold (they take the
				// highest free ones).
				fp.named = free[:gpus]
				ann = map[string]string{AnnGPUIndices: FormatIndices(fp.named)}
			}
			fp.p = running(pod(fmt.Sprintf("x%d", f.n), gpus, ann, node))
			fp.p.Spec.SchedulerName = "default-scheduler"
			f.pods["ns/"+fp.p.Name] = fp
			f.w.s.state.OnBoundPod(fp.p)
		}
	}
	if len(f.pods) > 0 && f.rng.IntN(4) == 0 {
		keys := slices.Sorted(maps.Keys(f.pods))
		k := keys[f.rng.IntN(len(keys))]
		delete(f.pods, k)
		f.w.s.state.OnBoundPodDeleted(k)
	}
}

// tell shows a new scheduler process the pods.
func (f *otherPods) tell() {
	for _, k := range slices.Sorted(maps.Keys(f.pods)) {
		f.w.s.state.OnBoundPod(f.pods[k].p)
	}
}

// check reports a pod of ours on a device a foreign pod names, or a node
// where ours and theirs hold more than its 4 GPUs.
func (f *otherPods) check() error {
	ours := f.ours()
	for _, k := range slices.Sorted(maps.Keys(f.pods)) {
		p := f.pods[k]
		for _, x := range p.named {
			if slices.Contains(ours[p.node], x) {
				return fmt.Errorf("a pod of ours bound on %s device %d, which %s holds", p.node, x, k)
			}
		}
	}
	for node, idx := range ours {
		n := len(idx)
		for _, p := range f.pods {
			if p.node == node {
				n += p.gpus
			}
		}
		if n > 4 {
			return fmt.Errorf("node %s: ours and other schedulers' pods hold %d GPUs", node, n)
		}
	}
	return nil
}
