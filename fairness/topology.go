package fairness

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/palsched/pal/cluster"
	"github.com/palsched/pal/internal/quote"
	"github.com/palsched/pal/variability"
)

// Topology is what a bid needs to know about where GPUs sit: the machine
// and rack of every GPU and, optionally, each GPU's PM-score per
// application class (time-like: 1 is the median GPU, 1.2 is 20% slower).
// GPU ids are 0..N-1 as in package cluster.
type Topology struct {
	machine   []int   // machine of each GPU
	gpusOf    [][]int // GPUs of each machine, ascending
	offset    []int   // Σ sizes of the machines before each
	rack      []int   // rack of each machine (all 0 without racks)
	slot      []int   // slot of each GPU (nil: one slot per machine)
	machines  int
	racks     int
	perRack   int // machines per rack, 0 = no racks
	perSlot   int // GPUs per slot, 0 = no slots
	speed     [variability.NumClasses][]float64
	hasSpeeds bool
}

// NewTopology builds a topology from each GPU's machine (machines are
// numbered 0..M-1 and every machine must have a GPU). machinesPerRack > 0
// groups consecutive machines into racks.
func NewTopology(machineOf []int, machinesPerRack int) (*Topology, error) {
	if len(machineOf) == 0 {
		return nil, fmt.Errorf("topology: no GPUs")
	}
	if machinesPerRack < 0 {
		return nil, fmt.Errorf("topology: machines per rack must be >= 0, got %d", machinesPerRack)
	}
	m := 0
	for g, n := range machineOf {
		if n < 0 {
			return nil, fmt.Errorf("topology: GPU %d on machine %d", g, n)
		}
		m = max(m, n+1)
	}
	seen := make([]bool, m)
	for _, n := range machineOf {
		seen[n] = true
	}
	for n, ok := range seen {
		if !ok {
			return nil, fmt.Errorf("topology: machine %d has no GPU", n)
		}
	}
	t := &Topology{machine: append([]int(nil), machineOf...), machines: m, perRack: machinesPerRack, racks: 1}
	t.gpusOf = make([][]int, m)
	for g, n := range t.machine {
		t.gpusOf[n] = append(t.gpusOf[n], g)
	}
	t.offset = make([]int, m)
	for n := 1; n < m; n++ {
		t.offset[n] = t.offset[n-1] + len(t.gpusOf[n-1])
	}
	t.rack = make([]int, m)
	if machinesPerRack > 0 {
		for n := range t.rack {
			t.rack[n] = n / machinesPerRack
		}
		t.racks = (m + machinesPerRack - 1) / machinesPerRack
	}
	return t, nil
}

// UniformTopology is machines × gpusPerMachine with GPU ids
// machine·gpusPerMachine + index.
func UniformTopology(machines, gpusPerMachine, machinesPerRack int) (*Topology, error) {
	if machines <= 0 || gpusPerMachine <= 0 {
		return nil, fmt.Errorf("topology: need at least one machine and one GPU per machine, got %dx%d", machines, gpusPerMachine)
	}
	of := make([]int, machines*gpusPerMachine)
	for g := range of {
		of[g] = g / gpusPerMachine
	}
	return NewTopology(of, machinesPerRack)
}

// Levels are the Themis authors' cluster levels above a GPU: GPUs share a
// slot (e.g. one PCIe switch), slots a machine, machines a rack.
type Levels struct {
	Racks, MachinesPerRack, SlotsPerMachine, GPUsPerSlot int
}

// ParseLevels reads "RxMxSxG": racks x machines per rack x slots per
// machine x GPUs per slot (the authors' cluster configurations, e.g.
// 2x2x2x4 = 32 GPUs).
func ParseLevels(spec string) (Levels, error) {
	var l Levels
	parts := strings.Split(spec, "x")
	if len(parts) != 4 {
		return l, fmt.Errorf("topology %s: want RACKSxMACHINESxSLOTSxGPUS, e.g. 2x2x2x4", quote.Value(spec))
	}
	for i, dst := range []*int{&l.Racks, &l.MachinesPerRack, &l.SlotsPerMachine, &l.GPUsPerSlot} {
		v, err := strconv.Atoi(parts[i])
		if err != nil || v > 1<<20 {
			return l, fmt.Errorf("topology %s: %s is not a count (want RACKSxMACHINESxSLOTSxGPUS, e.g. 2x2x2x4)", quote.Value(spec), quote.Value(parts[i]))
		}
		*dst = v
	}
	if l.Racks < 1 || l.MachinesPerRack < 1 || l.SlotsPerMachine < 1 || l.GPUsPerSlot < 1 {
		return l, fmt.Errorf("topology %s: every level needs at least 1", quote.Value(spec))
	}
	if n := l.Racks * l.MachinesPerRack; n > 1<<20 || n*l.SlotsPerMachine > 1<<20 || n*l.SlotsPerMachine*l.GPUsPerSlot > 1<<20 {
		return l, fmt.Errorf("topology %s: more than %d GPUs", quote.Value(spec), 1<<20)
	}
	return l, nil
}

// Machines is the number of machines.
func (l Levels) Machines() int { return l.Racks * l.MachinesPerRack }

// GPUsPerMachine is the number of GPUs in a machine.
func (l Levels) GPUsPerMachine() int { return l.SlotsPerMachine * l.GPUsPerSlot }

// String is "RxMxSxG".
func (l Levels) String() string {
	return fmt.Sprintf("%dx%dx%dx%d", l.Racks, l.MachinesPerRack, l.SlotsPerMachine, l.GPUsPerSlot)
}

// LevelTopology is the uniform topology of l: GPU g is on machine
// g / GPUsPerMachine, in slot g / GPUsPerSlot, and machine m in rack
// m / MachinesPerRack.
func LevelTopology(l Levels) (*Topology, error) {
	t, err := UniformTopology(l.Machines(), l.GPUsPerMachine(), l.MachinesPerRack)
	if err != nil {
		return nil, err
	}
	return t.WithSlots(l.GPUsPerSlot)
}

// WithSlots returns a copy whose machines are split into slots of
// gpusPerSlot consecutive GPUs (each machine's GPU count must be a
// multiple of it).
func (t *Topology) WithSlots(gpusPerSlot int) (*Topology, error) {
	if gpusPerSlot < 1 {
		return nil, fmt.Errorf("topology: GPUs per slot must be >= 1, got %d", gpusPerSlot)
	}
	d := *t
	d.perSlot = gpusPerSlot
	d.slot = make([]int, len(t.machine))
	next := 0
	for m, gs := range t.gpusOf {
		if len(gs)%gpusPerSlot != 0 {
			return nil, fmt.Errorf("topology: machine %d has %d GPUs, not a multiple of %d per slot", m, len(gs), gpusPerSlot)
		}
		for i, g := range gs {
			d.slot[g] = next + i/gpusPerSlot
		}
		next += len(gs) / gpusPerSlot
	}
	return &d, nil
}

// WithSpeeds returns a copy whose bids count PM-scores: sf[c][g] is GPU
// g's time-like score for class c. A gang runs at its slowest GPU.
func (t *Topology) WithSpeeds(sf [variability.NumClasses][]float64) (*Topology, error) {
	for c := range sf {
		if len(sf[c]) != len(t.machine) {
			return nil, fmt.Errorf("topology: class %s has scores for %d GPUs, the cluster has %d", variability.Class(c), len(sf[c]), len(t.machine))
		}
		for g, v := range sf[c] {
			if !(v > 0) || math.IsInf(v, 0) {
				return nil, fmt.Errorf("topology: class %s GPU %d: score must be positive and finite, got %v", variability.Class(c), g, v)
			}
		}
	}
	d := *t
	d.speed = sf
	d.hasSpeeds = true
	return &d, nil
}

// NumGPUs is the number of GPUs.
func (t *Topology) NumGPUs() int { return len(t.machine) }

// NumMachines is the number of machines.
func (t *Topology) NumMachines() int { return t.machines }

// MachineOf is the machine of GPU g.
func (t *Topology) MachineOf(g int) int { return t.machine[g] }

// HasSpeeds reports whether PM-scores are attached.
func (t *Topology) HasSpeeds() bool { return t.hasSpeeds }

// score is GPU g's time-like PM-score for class c (1 without scores).
func (t *Topology) score(c variability.Class, g int) float64 {
	if !t.hasSpeeds {
		return 1
	}
	return t.speed[c][g]
}

// Sensitivity is an app's placement sensitivity: the throughput factor of
// a job whose GPUs span machines, and of one that spans racks. 1 means
// insensitive; the Themis simulator's examples are 0.98/0.96 for most
// models and 0.8/0.7 for VGG16.
//
// Slot is the factor of a job whose GPUs sit in one machine but span its
// slots (the authors' third level; 0 means 1, no slowdown: the authors'
// model statistics charge nothing there, their macro workload 0.8).
type Sensitivity struct {
	Machine float64
	Rack    float64 // 0: same as Machine
	Slot    float64 // 0: 1
}

// Validate checks 0 < Rack ≤ Machine ≤ Slot ≤ 1.
func (s Sensitivity) Validate() error {
	if !(s.Machine > 0 && s.Machine <= 1) {
		return fmt.Errorf("spread factor must be in (0, 1], got %v", s.Machine)
	}
	if s.Slot != 0 && !(s.Slot >= s.Machine && s.Slot <= 1) {
		return fmt.Errorf("slot factor must be in [spread factor %v, 1], got %v", s.Machine, s.Slot)
	}
	if s.Rack != 0 && !(s.Rack > 0 && s.Rack <= s.Machine) {
		return fmt.Errorf("rack factor must be in (0, spread factor %v], got %v", s.Machine, s.Rack)
	}
	return nil
}

func (s Sensitivity) rack() float64 {
	if s.Rack == 0 {
		return s.Machine
	}
	return s.Rack
}

func (s Sensitivity) slotF() float64 {
	if s.Slot == 0 {
		return 1
	}
	return s.Slot
}

// Insensitive is S ≡ 1.
var Insensitive = Sensitivity{Machine: 1, Rack: 1}

// Placement is S(G) ∈ (0, 1] for one job's GPUs: 1 inside one slot (one
// machine when there are no slots), the slot factor across a machine's
// slots, the machine factor across machines, the rack factor across
// racks: the widest boundary crossed decides, as in the authors'
// simulator.
func (t *Topology) Placement(gpus []int, s Sensitivity) float64 {
	return t.placement2(gpus, nil, s)
}

// placement2 is Placement of the union of two disjoint GPU lists.
func (t *Topology) placement2(a, b []int, s Sensitivity) float64 {
	if len(a)+len(b) < 2 {
		return 1
	}
	first := a
	if len(first) == 0 {
		first = b
	}
	m0 := t.machine[first[0]]
	r0 := t.rack[m0]
	spread, slots := false, false
	for _, l := range [2][]int{a, b} {
		for _, g := range l {
			m := t.machine[g]
			if m == m0 {
				slots = slots || (t.slot != nil && t.slot[g] != t.slot[first[0]])
				continue
			}
			if t.rack[m] != r0 {
				return s.rack()
			}
			spread = true
		}
	}
	if spread {
		return s.Machine
	}
	if slots {
		return s.slotF()
	}
	return 1
}

// jobRate is one job's throughput in ideal-GPU units on gpus: |G|·S(G),
// divided by the slowest GPU's PM-score when speeds count.
func (t *Topology) jobRate(gpus []int, s Sensitivity, c variability.Class, speeds bool) float64 {
	return t.jobRate2(gpus, nil, s, c, speeds)
}

// jobRate2 is jobRate on the union of two disjoint GPU lists (held plus
// new) without building it.
func (t *Topology) jobRate2(a, b []int, s Sensitivity, c variability.Class, speeds bool) float64 {
	n := len(a) + len(b)
	if n == 0 {
		return 0
	}
	r := float64(n) * t.placement2(a, b, s)
	if speeds && t.hasSpeeds {
		worst := 0.0
		for _, l := range [2][]int{a, b} {
			for _, g := range l {
				worst = max(worst, t.speed[c][g])
			}
		}
		r /= worst
	}
	return r
}

// String is "MxG" for uniform topologies.
func (t *Topology) String() string {
	g := len(t.gpusOf[0])
	for _, l := range t.gpusOf {
		if len(l) != g {
			return fmt.Sprintf("%d machines/%d GPUs", t.machines, len(t.machine))
		}
	}
	return fmt.Sprintf("%dx%d", t.machines, g)
}

// FromCluster is the topology of a cluster: its nodes are the machines,
// with no racks.
func FromCluster(c *cluster.Cluster) (*Topology, error) {
	of := make([]int, c.Size())
	for g := range of {
		of[g] = c.NodeOf(g)
	}
	return NewTopology(of, 0)
}

// Pack takes n of free (ascending): inside the machine that fits most
// tightly, else from the fullest machines first; the result is ascending.
func (t *Topology) Pack(free []int, n int) []int {
	by := map[int][]int{}
	var ms []int
	for _, g := range free {
		m := t.machine[g]
		if by[m] == nil {
			ms = append(ms, m)
		}
		by[m] = append(by[m], g)
	}
	fit := -1
	for _, m := range ms {
		if len(by[m]) >= n && (fit < 0 || len(by[m]) < len(by[fit])) {
			fit = m
		}
	}
	var out []int
	if fit >= 0 {
		out = slices.Clone(by[fit][:n])
	} else {
		slices.SortStableFunc(ms, func(a, b int) int { return cmp.Compare(len(by[b]), len(by[a])) })
		for _, m := range ms {
			out = append(out, by[m][:min(len(by[m]), n-len(out))]...)
			if len(out) == n {
				break
			}
		}
	}
	slices.Sort(out)
	return out
}
