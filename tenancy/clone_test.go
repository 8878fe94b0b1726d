package tenancy

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"
)

// fingerprint renders everything a decision can change that the
// scheduler shows: free lists, bindings, each VC's bound, used and unused
// cells, every leaf's use, health and quarantine, every group's devices,
// priority and preemption.
func fingerprint(s *Scheduler) string {
	var b strings.Builder
	b.WriteString(s.dump())
	for _, vc := range s.vcs {
		for _, list := range [][]*vcChain{vc.chains, vc.pins} {
			for _, vcc := range list {
				bound, used := 0, 0
				var cells []string
				for _, v := range vcc.pre {
					if v.phys != nil {
						bound++
						cells = append(cells, fmt.Sprintf("%d@%s/%d", v.idx, v.phys.Addr, v.used))
					}
					used += v.used
				}
				fmt.Fprintf(&b, "VC %s chain %s pin %q: bound %d used %d unused %v %v\n", vc.Name, vcc.chain.Name, vcc.pinnedID, bound, used, vcc.unused, cells)
			}
		}
	}
	for _, l := range s.leaves {
		name := func(g *Group) string {
			if g == nil {
				return "-"
			}
			return g.Name
		}
		fmt.Fprintf(&b, "%s used %d opp %d bad %d quar %v group %s leaving %s\n", l.Addr, l.used, l.opp, l.bad, l.quar, name(l.group), name(l.leaving))
	}
	for _, g := range s.Groups() {
		prio, demoted, _ := s.GroupInfo(g)
		fmt.Fprintf(&b, "group %s prio %d demoted %v state %d\n", g, prio, demoted, s.groups[g].state)
	}
	fmt.Fprintf(&b, "preempting %v leaving %v bad %v doomed %v quarantined %d\n", s.Preempting(), s.Leaving(), s.BadNodes(), s.DoomedCells(), s.NumQuarantined())
	return b.String()
}

// randomStep makes one random decision: a guaranteed or opportunistic group,
// a preemptor asking again, a release, a node failing or coming back, or
// a device quarantined or given back.
func randomStep(t *testing.T, s *Scheduler, rng *rand.Rand, seq *int, fastest bool) string {
	t.Helper()
	nodes := slices.Sorted(func(yield func(string) bool) {
		for n := range s.byNode {
			if !yield(n) {
				return
			}
		}
	})
	switch op := rng.IntN(10); {
	case op < 5:
		vc := s.vcs[rng.IntN(len(s.vcs))]
		if len(vc.chains) == 0 {
			return "none"
		}
		vcc := vc.chains[rng.IntN(len(vc.chains))]
		pods := make([]int, 1+rng.IntN(2))
		for i := range pods {
			pods[i] = 1 + rng.IntN(vcc.chain.types[vcc.chain.NodeLevel].leaves)
		}
		*seq++
		r := Request{Group: fmt.Sprintf("g%d", *seq), VC: vc.Name, Priority: rng.IntN(3), Pods: pods, LeafType: vcc.chain.LeafType,
			NoPreemption: rng.IntN(2) == 0, LazyPreemptable: rng.IntN(3) == 0, Fastest: fastest, Class: rng.IntN(2)}
		if fastest && rng.IntN(2) == 0 {
			r.LV = []LVStep{{V: 0.5}, {V: 0.5, Across: true}, {V: 1}, {V: 1, Across: true}}
		}
		d, err := s.Schedule(r)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("guaranteed %+v → %v", r, d)
	case op < 7:
		*seq++
		r := Request{Group: fmt.Sprintf("o%d", *seq), VC: s.vcs[rng.IntN(len(s.vcs))].Name, Priority: Opportunistic, Pods: []int{1 + rng.IntN(2)}}
		d, err := s.Schedule(r)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("opportunistic %+v → %v", r, d)
	case op < 8:
		ps := slices.Sorted(func(yield func(string) bool) {
			for g := range s.Preempting() {
				if !yield(g) {
					return
				}
			}
		})
		if len(ps) == 0 {
			return "none"
		}
		g := s.groups[ps[rng.IntN(len(ps))]]
		r := Request{Group: g.Name, VC: g.VC.Name, Priority: g.Priority, Pods: make([]int, len(g.pods))}
		for i, pod := range g.pods {
			r.Pods[i] = len(pod)
		}
		d, err := s.Schedule(r)
		if err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("again %+v → %v", r, d)
	case op < 9:
		gs := s.Groups()
		if len(gs) == 0 {
			return "none"
		}
		g := gs[rng.IntN(len(gs))]
		if err := s.Release(g); err != nil {
			t.Fatal(err)
		}
		return "release " + g
	default:
		n := nodes[rng.IntN(len(nodes))]
		healthy := rng.IntN(2) == 0
		if rng.IntN(2) == 0 {
			leaves := pleavesOf(s.byNode[n][0], nil)
			g := leaves[rng.IntN(len(leaves))].gpu
			if err := s.Quarantine(n, g, !healthy); err != nil {
				t.Fatal(err)
			}
			return fmt.Sprintf("quarantine %s[%d] %v", n, g, !healthy)
		}
		if err := s.SetNodeHealth(n, healthy); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("node %s healthy %v", n, healthy)
	}
}

// A clone starts where its original stands, decides as it would, and
// shares nothing a decision changes: random decisions on either leave
// the other's state (and its invariant) exactly as it was.
func TestCloneIsIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 31))
	configs, compared := 300, 0
	for c := range configs {
		cfg := randomConfig(rng)
		s, err := New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		s.SetStateful(true)
		fastest := c%2 == 0
		if fastest {
			speeds := map[string]float64{}
			for _, l := range s.leaves {
				speeds[fmt.Sprintf("%s/%d", l.node, l.gpu)] = rng.Float64()
			}
			s.SetSpeeds(2, func(class int, node string, gpu int) float64 {
				return speeds[fmt.Sprintf("%s/%d", node, gpu)] + float64(class)
			})
			s.SetBalance(c%4 == 0)
		}
		seq := 0
		for range rng.IntN(30) {
			randomStep(t, s, rng, &seq, fastest)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("config %d before cloning: %v", c, err)
		}
		before := fingerprint(s)
		k := s.Clone()
		if got := fingerprint(k); got != before {
			t.Fatalf("config %d: the clone reads\n%s\nthe original\n%s", c, got, before)
		}
		if err := shared(s, k); err != nil {
			t.Fatalf("config %d: %v", c, err)
		}
		// The same decisions on both give the same answers and states.
		twin := s.Clone()
		r1, r2 := rand.New(rand.NewPCG(uint64(c), 1)), rand.New(rand.NewPCG(uint64(c), 1))
		seq1, seq2 := seq, seq
		for i := range 20 {
			a, b := randomStep(t, k, r1, &seq1, fastest), randomStep(t, twin, r2, &seq2, fastest)
			if a != b {
				t.Fatalf("config %d step %d: clones decide %s and %s", c, i, a, b)
			}
			compared++
		}
		if fingerprint(k) != fingerprint(twin) {
			t.Fatalf("config %d: two clones given the same decisions differ", c)
		}
		// Decisions on the clone never reach the original ...
		if got := fingerprint(s); got != before {
			t.Fatalf("config %d: decisions on a clone changed the original:\n%s\nwas\n%s", c, got, before)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("config %d: the original after decisions on its clone: %v", c, err)
		}
		// ... nor decisions on the original the clone.
		kept := fingerprint(k)
		for range 20 {
			randomStep(t, s, rng, &seq, fastest)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("config %d: the original after its own decisions: %v", c, err)
		}
		if got := fingerprint(k); got != kept {
			t.Fatalf("config %d: decisions on the original changed its clone:\n%s\nwas\n%s", c, got, kept)
		}
		if err := k.Check(); err != nil {
			t.Fatalf("config %d: the clone after decisions on its original: %v", c, err)
		}
	}
	if compared < configs*20 {
		t.Fatalf("%d steps compared", compared)
	}
}

// shared reports memory two schedulers both reach that a decision may
// write: a pointer, map or slice array found from both, other than the
// config, the cell types and the speed function, which never change.
func shared(a, b *Scheduler) error {
	seen := map[uintptr]string{}
	walkMem(reflect.ValueOf(a), "s", map[uintptr]bool{}, func(p uintptr, path string) {
		if _, ok := seen[p]; !ok {
			seen[p] = path
		}
	})
	var err error
	walkMem(reflect.ValueOf(b), "s", map[uintptr]bool{}, func(p uintptr, path string) {
		if was, ok := seen[p]; ok && err == nil {
			err = fmt.Errorf("the clone's %s is the original's %s", path, was)
		}
	})
	return err
}

var (
	configType   = reflect.TypeFor[*Config]()
	cellTypeType = reflect.TypeFor[*cellType]()
)

// walkMem calls f with the address of every pointer target, map and
// non-empty slice array reachable from v, once each.
func walkMem(v reflect.Value, path string, done map[uintptr]bool, f func(p uintptr, path string)) {
	switch v.Kind() {
	case reflect.Pointer:
		if v.IsNil() || v.Type() == configType || v.Type() == cellTypeType {
			return
		}
		p := v.Pointer()
		f(p, path)
		if done[p] {
			return
		}
		done[p] = true
		walkMem(v.Elem(), path, done, f)
	case reflect.Map:
		if v.IsNil() {
			return
		}
		p := v.Pointer()
		f(p, path)
		if done[p] {
			return
		}
		done[p] = true
		keys := v.MapKeys()
		sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
		for _, k := range keys {
			walkMem(v.MapIndex(k), fmt.Sprintf("%s[%v]", path, k), done, f)
		}
	case reflect.Slice:
		if v.Cap() == 0 {
			return
		}
		if v.Type().Elem() == cellTypeType {
			return
		}
		p := v.Pointer()
		f(p, path)
		for i := range v.Len() {
			walkMem(v.Index(i), fmt.Sprintf("%s[%d]", path, i), done, f)
		}
	case reflect.Struct:
		for i := range v.NumField() {
			walkMem(v.Field(i), path+"."+v.Type().Field(i).Name, done, f)
		}
	case reflect.Interface:
		if !v.IsNil() {
			walkMem(v.Elem(), path, done, f)
		}
	}
}

// The cost of a forecast's copy of the cells: 5,000 nodes of 8 GPUs in
// pairs and sockets, 10 VCs of 500 nodes, half of every VC's GPUs held
// by 4-GPU groups.
func BenchmarkClone(b *testing.B) {
	var y strings.Builder
	y.WriteString("physicalCluster:\n  cellTypes:\n    PAIR: {childCellType: GPU, childCellNumber: 2}\n" +
		"    SOCKET: {childCellType: PAIR, childCellNumber: 2}\n    NODE: {childCellType: SOCKET, childCellNumber: 2, isNodeLevel: true}\n  physicalCells:\n")
	for i := range 5000 {
		fmt.Fprintf(&y, "  - {cellType: NODE, cellAddress: n%d}\n", i)
	}
	y.WriteString("virtualClusters:\n")
	for v := range 10 {
		fmt.Fprintf(&y, "  vc%d: {virtualCells: [{cellType: NODE, cellNumber: 500}]}\n", v)
	}
	cfg, err := Parse("bench.yaml", []byte(y.String()))
	if err != nil {
		b.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		b.Fatal(err)
	}
	for v := range 10 {
		for k := range 500 {
			d, err := s.Schedule(Request{Group: fmt.Sprintf("vc%d-%d", v, k), VC: fmt.Sprintf("vc%d", v), Pods: []int{4}})
			if err != nil || !d.Placed {
				b.Fatalf("group %d of vc%d: %v %v", k, v, err, d.Reason)
			}
		}
	}
	b.ResetTimer()
	for range b.N {
		if s.Clone() == nil {
			b.Fatal("no clone")
		}
	}
}
