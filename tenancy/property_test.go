package tenancy

import (
	"fmt"
	"math/rand/v2"
	"os"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// randomConfig builds a random cluster of one or two chains and a random
// feasible VC assignment (cells are added while the full splittable check
// accepts them).
func randomConfig(rng *rand.Rand) *Config {
	cfg := &Config{File: "random.yaml"}
	chains := 1 + rng.IntN(2)
	var tops []string
	node := 0
	for c := 0; c < chains; c++ {
		levels := 2 + rng.IntN(3) // 2..4
		nodeLevel := 2 + rng.IntN(levels-1)
		prev := fmt.Sprintf("GPU%d", c)
		for l := 2; l <= levels; l++ {
			name := fmt.Sprintf("C%dL%d", c, l)
			cfg.CellTypes = append(cfg.CellTypes, CellTypeSpec{Name: name, ChildCellType: prev, ChildCellNumber: 1 + rng.IntN(3), IsNodeLevel: l == nodeLevel})
			prev = name
		}
		tops = append(tops, prev)
		n := 1 + rng.IntN(3)
		for i := 0; i < n; i++ {
			cfg.PhysicalCells = append(cfg.PhysicalCells, namedCell(cfg, prev, &node))
		}
	}
	nvc := 1 + rng.IntN(4)
	for v := 0; v < nvc; v++ {
		cfg.VCs = append(cfg.VCs, VCSpec{Name: fmt.Sprintf("VC%d", v)})
	}
	// Try random reservations; keep those that stay feasible.
	for try := 0; try < 30; try++ {
		v := rng.IntN(nvc)
		top := tops[rng.IntN(len(tops))]
		path := typePath(cfg, top)
		k := 1 + rng.IntN(len(path))
		vs := VirtualCellSpec{CellType: joinPath(path[:k]), CellNumber: 1}
		cfg.VCs[v].VirtualCells = append(cfg.VCs[v].VirtualCells, vs)
		if _, err := New(cfg); err != nil {
			cfg.VCs[v].VirtualCells = cfg.VCs[v].VirtualCells[:len(cfg.VCs[v].VirtualCells)-1]
		}
	}
	return cfg
}

func typePath(cfg *Config, top string) []string {
	byName := map[string]CellTypeSpec{}
	for _, t := range cfg.CellTypes {
		byName[t.Name] = t
	}
	var out []string
	for name := top; ; {
		t, ok := byName[name]
		if !ok {
			break
		}
		out = append(out, name)
		name = t.ChildCellType
	}
	return out
}

func joinPath(p []string) string {
	s := p[0]
	for _, x := range p[1:] {
		s += "." + x
	}
	return s
}

// namedCell instantiates a top-level cell, naming every node-level cell.
func namedCell(cfg *Config, typ string, node *int) PhysicalCellSpec {
	byName := map[string]CellTypeSpec{}
	for _, t := range cfg.CellTypes {
		byName[t.Name] = t
	}
	var mk func(name string) PhysicalCellSpec
	mk = func(name string) PhysicalCellSpec {
		t, ok := byName[name]
		if !ok {
			return PhysicalCellSpec{}
		}
		p := PhysicalCellSpec{}
		if t.IsNodeLevel {
			p.CellAddress = fmt.Sprintf("node%d", *node)
			*node++
			return p
		}
		for i := 0; i < t.ChildCellNumber; i++ {
			p.Children = append(p.Children, mk(t.ChildCellType))
		}
		return p
	}
	p := mk(typ)
	p.CellType = typ
	return p
}

// H7: over thousands of random feasible configs and random sequences of
// guaranteed and opportunistic allocations, releases, failures and
// recoveries, the full invariant holds after every step; while all nodes
// are healthy, every request its VC's own view can place (a request that
// is valid within the VC) is placed, and no other is.
//
// Seeds: 7 is the original; 4 and 8 failed before bind stopped binding a
// virtual cell twice when its parent's binding showed bad hardware on it
// (see TestBindShowsBadNodeOffThePlacement). PAL_PROP_SEED=a,b,... runs
// other seeds instead; PAL_PROP_TRACE=N logs every step of config N.
func TestH7RandomSequencesKeepSafety(t *testing.T) {
	seeds := []uint64{7, 4, 8}
	if env := os.Getenv("PAL_PROP_SEED"); env != "" {
		seeds = nil
		for _, f := range strings.Split(env, ",") {
			v, err := strconv.ParseUint(strings.TrimSpace(f), 10, 64)
			if err != nil {
				t.Fatalf("PAL_PROP_SEED %q: %v", env, err)
			}
			seeds = append(seeds, v)
		}
	}
	for _, seed := range seeds {
		t.Run(fmt.Sprintf("seed%d", seed), func(t *testing.T) { runH7(t, seed, false) })
	}
}

// H7 with stateful preemption and allowed nodes: preemptors wait for
// their victims, which leave at random (Release), preemptors ask again or
// are deleted, higher priorities override preemptions in progress, and
// some requests may use only a random subset of the nodes. The full
// invariant and every preemption's consistency (Check) hold after every
// step; a request the VC's view can place without preemption on every
// node is placed or waits only for opportunistic victims.
//
// Seed 16 is kept beside 11 because its config 1407 once put a new group
// on a quarantined device: a higher-priority group chose a preemptor's
// leaves, cancelling the preemption rebound them (fixBad) onto a node with
// a quarantined device, and bind took a leaf already bound there as
// usable.
func TestH7StatefulAllowedNodes(t *testing.T) {
	for _, seed := range []uint64{11, 16} {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runH7(t, seed, true) })
	}
}

func runH7(t *testing.T, seed uint64, stateful bool) {
	configs := 2000
	if testing.Short() {
		configs = 300
	}
	rng := rand.New(rand.NewPCG(seed, seed))
	lvRng := rand.New(rand.NewPCG(seed, seed+1)) // its own stream: the other draws stay as they were
	qRng := rand.New(rand.NewPCG(seed, seed+2))  // quarantine's, likewise
	wRng := rand.New(rand.NewPCG(seed, seed+3))  // the VCs' queues under hived-speed, likewise
	steps, placed, valid, quarantines := 0, 0, 0, 0
	preempts, cancelled, restricted, waited, reconfigs := 0, 0, 0, 0, 0
	trace := -1 // PAL_PROP_TRACE=N logs config N and every step of it
	if env := os.Getenv("PAL_PROP_TRACE"); env != "" {
		n, err := strconv.Atoi(env)
		if err != nil {
			t.Fatalf("PAL_PROP_TRACE %q: %v", env, err)
		}
		trace = n
	}
	for c := 0; c < configs; c++ {
		cfg := randomConfig(rng)
		s, err := New(cfg)
		if err != nil {
			t.Fatalf("config %d: %v", c, err)
		}
		if err := s.Check(); err != nil {
			t.Fatalf("config %d initially: %v", c, err)
		}
		if c == trace {
			t.Logf("config %d: %+v", c, *cfg)
		}
		s.SetStateful(stateful)
		fastest := c%2 == 0
		if fastest {
			s.SetSpeeds(2, func(class int, node string, gpu int) float64 { return rng.Float64() })
			s.SetBalance(c%4 == 0) // hived-speed's binding in half of them
		}
		var nodes []string
		for n := range s.byNode {
			nodes = append(nodes, n)
		}
		sort.Strings(nodes)
		seq := 0
		before := ""
		for step := 0; step < 40; step++ {
			steps++
			op := rng.IntN(10)
			var what string
			switch {
			case op < 5 && len(s.vcs) > 0: // guaranteed group
				vc := s.vcs[rng.IntN(len(s.vcs))]
				if len(vc.chains) == 0 {
					continue
				}
				vcc := vc.chains[rng.IntN(len(vc.chains))]
				pods := make([]int, 1+rng.IntN(2))
				for i := range pods {
					pods[i] = 1 + rng.IntN(vcc.chain.types[vcc.chain.NodeLevel].leaves)
				}
				prio := rng.IntN(3)
				seq++
				r := Request{Group: fmt.Sprintf("g%d", seq), VC: vc.Name, Priority: prio, Pods: pods,
					LeafType: vcc.chain.LeafType, NoPreemption: rng.IntN(2) == 0, LazyPreemptable: rng.IntN(3) == 0,
					Fastest: fastest, Class: rng.IntN(2)}
				if fastest && lvRng.IntN(2) == 0 { // hived-pm's L×V walk over the VC's bound cells
					r.LV = []LVStep{{V: 0.3}, {V: 0.3, Across: true}, {V: 0.7}, {V: 0.7, Across: true}, {V: 1}, {V: 1, Across: true}}
					r.Spread = lvRng.IntN(2) == 0
				}
				if stateful && rng.IntN(3) == 0 {
					r.Nodes = []string{}
					for _, n := range nodes {
						if rng.IntN(2) == 0 {
							r.Nodes = append(r.Nodes, n)
						}
					}
				}
				if s.balance { // random queues, so that pressed VCs bind too
					q := map[string]int{}
					for _, v := range s.vcs {
						q[v.Name] = wRng.IntN(4)
					}
					s.SetQueues(q)
				}
				canView := s.viewCanPlace(vc, r)
				before = s.dump()
				d, err := s.Schedule(r)
				if err != nil {
					t.Fatalf("config %d step %d: %v", c, step, err)
				}
				what = fmt.Sprintf("guaranteed %+v → %v", r, d)
				if d.Preempting {
					preempts++
				}
				cancelled += len(d.Cancelled)
				if r.Nodes != nil && (d.Placed || d.Preempting) {
					restricted++
					for _, p := range d.Pods {
						if !slices.Contains(r.Nodes, p.Node) {
							t.Fatalf("config %d step %d: %+v placed on %s, outside its nodes", c, step, r, p.Node)
						}
					}
				}
				if stateful && d.Preempting {
					d.Placed = true // it holds its cells; only opportunistic groups may be on them
				}
				if d.Placed {
					// A new guaranteed group never gets a quarantined device.
					for _, q := range s.Quarantined() {
						for _, p := range d.Pods {
							if p.Node == q.Node && slices.Contains(p.GPUs, q.GPU) {
								t.Fatalf("config %d step %d: %+v placed on quarantined %s[%d]\n%s", c, step, r, q.Node, q.GPU, s.dump())
							}
						}
					}
				}
				if len(s.BadNodes()) == 0 && len(s.Quarantined()) == 0 && r.NoPreemption && r.Nodes == nil {
					if canView {
						valid++
					}
					// An L×V across entry may split pods the view cannot fit,
					// and the L×V walk picks devices by speed, not by the
					// view's aligned packing, so it may place what the view
					// cannot; what the view can place must always be placed.
					if canView != d.Placed && !(d.Placed && (r.Spread || len(r.LV) > 0)) {
						t.Fatalf("config %d step %d: %+v: view says %v, scheduler %v (%s)\n%s\nbefore:\n%s", c, step, r, canView, d.Placed, d.Reason, s.dump(), before)
					}
				}
				if d.Placed {
					placed++
				}
			case op < 7: // opportunistic group
				vc := s.vcs[rng.IntN(len(s.vcs))]
				seq++
				// One to three pods: pods of one group may share a node,
				// and must not share a device.
				pods := make([]int, 1+rng.IntN(3))
				for i := range pods {
					pods[i] = 1 + rng.IntN(2)
				}
				r := Request{Group: fmt.Sprintf("o%d", seq), VC: vc.Name, Priority: Opportunistic, Pods: pods}
				d, err := s.Schedule(r)
				if err != nil {
					t.Fatalf("config %d step %d: %v", c, step, err)
				}
				what = fmt.Sprintf("opportunistic %+v → %v", r, d)
			case op < 8 && stateful: // a preemptor asks again
				var ps []string
				for g := range s.Preempting() {
					ps = append(ps, g)
				}
				if len(ps) == 0 {
					continue
				}
				sort.Strings(ps)
				g := s.groups[ps[rng.IntN(len(ps))]]
				r := Request{Group: g.Name, VC: g.VC.Name, Priority: g.Priority, Pods: make([]int, len(g.pods))}
				for i, pod := range g.pods {
					r.Pods[i] = len(pod)
				}
				d, err := s.Schedule(r)
				if err != nil {
					t.Fatalf("config %d step %d: %v", c, step, err)
				}
				what = fmt.Sprintf("again %+v → %v", r, d)
				if d.Placed {
					waited++
				}
			case op < 9: // release
				gs := s.Groups()
				if len(gs) == 0 {
					continue
				}
				g := gs[rng.IntN(len(gs))]
				if err := s.Release(g); err != nil {
					t.Fatal(err)
				}
				what = "release " + g
			case stateful && op == 9 && rng.IntN(4) == 0: // restart with the same config
				n, rep, err := s.Reconfigure(cfg)
				if err != nil {
					t.Fatalf("config %d step %d: %v", c, step, err)
				}
				if err := n.Check(); err != nil {
					t.Fatalf("config %d step %d: after reconfiguring: %v\n%s\nbefore:\n%s", c, step, err, n.dump(), s.dump())
				}
				for name, g := range s.groups {
					if g.state == preempting {
						continue
					}
					was, _ := s.Placement(name)
					now, ok := n.Placement(name)
					if !ok || !reflect.DeepEqual(was, now) {
						t.Fatalf("config %d step %d: group %s ran on %v, now %v", c, step, name, was, now)
					}
				}
				if len(rep.Demoted) > 0 {
					t.Fatalf("config %d step %d: the same config lazily preempted %v\n%s", c, step, rep.Demoted, s.dump())
				}
				reconfigs++
				s = n
				what = "reconfigure"
			default: // failure or recovery, of a node or (quarantine) of one device
				n := nodes[rng.IntN(len(nodes))]
				healthy := rng.IntN(2) == 0
				if qRng.IntN(2) == 0 {
					leaves := pleavesOf(s.byNode[n][0], nil)
					g := leaves[qRng.IntN(len(leaves))].gpu
					if err := s.Quarantine(n, g, !healthy); err != nil {
						t.Fatal(err)
					}
					quarantines++
					what = fmt.Sprintf("device %s[%d] quarantined=%v", n, g, !healthy)
					break
				}
				if err := s.SetNodeHealth(n, healthy); err != nil {
					t.Fatal(err)
				}
				what = fmt.Sprintf("node %s healthy=%v", n, healthy)
			}
			if c == trace {
				t.Logf("step %d: %s\n%s", step, what, s.dump())
			}
			if err := s.Check(); err != nil {
				t.Fatalf("config %d step %d after %s: %v\n%s\nbefore:\n%s", c, step, what, err, s.dump(), before)
			}
		}
	}
	t.Logf("%d configs, %d steps, %d placements, %d valid no-preemption requests all placed, %d quarantine changes", configs, steps, placed, valid, quarantines)
	if stateful {
		t.Logf("%d preemptions waited for victims, %d placed after waiting, %d overridden or cancelled, %d placed inside allowed nodes, %d reconfigurations",
			preempts, waited, cancelled, restricted, reconfigs)
		if preempts < configs || waited < configs/20 || cancelled < configs/10 || restricted < configs || reconfigs < configs/4 {
			t.Fatal("the generator is too weak to exercise stateful preemption")
		}
	}
	if valid < configs {
		t.Fatalf("only %d valid requests checked; the generator is too weak", valid)
	}
}

// viewCanPlace asks the VC's intra-VC scheduler alone (first pass, no
// preemption) whether the request fits the VC as if it were private.
func (s *Scheduler) viewCanPlace(vc *VC, r Request) bool {
	for _, vcc := range vc.chains {
		if r.LeafType != "" && vcc.chain.LeafType != r.LeafType {
			continue
		}
		if vp, _ := s.placeInVC(vcc, r.Pods, r.Priority, false); vp != nil {
			return true
		}
	}
	return false
}

// dump renders the state for a failing test.
func (s *Scheduler) dump() string {
	out := ""
	for _, ch := range s.chains {
		out += fmt.Sprintf("chain %s top %d node %d splittable %v vcUnused %v\n", ch.Name, ch.Top(), ch.NodeLevel, ch.splittable(), ch.vcUnused)
		for l := 1; l <= ch.Top(); l++ {
			out += fmt.Sprintf("  free[%d] = %v\n", l, freeList(s, ch.Name, l))
		}
		out += fmt.Sprintf("  bound %v\n", bindings(s, ch.Name))
	}
	for _, g := range s.Groups() {
		p, _ := s.Placement(g)
		out += fmt.Sprintf("  group %s prio %d %v\n", g, s.groups[g].Priority, p)
	}
	return out
}
