package themisrun

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/palsched/pal/workload"
)

// Slowdown is a model's throughput factor when a job's GPUs cross
// machines and when they cross racks (1 = no slowdown), and when they
// cross a machine's slots (0: 1).
type Slowdown struct{ Machine, Rack, Slot float64 }

// AuthorsSlowdowns are the Themis authors' simulator's factors for its
// models (its Themis model statistics; crossing slots costs nothing there).
var AuthorsSlowdowns = map[string]Slowdown{
	"vgg19": {0.70, 0.50, 1}, "vgg16": {0.72, 0.52, 1}, "vgg11": {0.75, 0.56, 1}, "alexnet": {0.80, 0.64, 1},
	"resnet50": {0.98, 0.96, 1}, "resnet101": {0.98, 0.96, 1}, "resnet152": {0.98, 0.96, 1},
	"inception3": {0.98, 0.96, 1}, "inception4": {0.98, 0.96, 1}, "googlenet": {0.98, 0.96, 1},
}

// MacroSlowdown is the authors' macro workload's factor for every job:
// 0.8 across slots, 0.7 across machines, 0.6 across racks.
var MacroSlowdown = Slowdown{Machine: 0.7, Rack: 0.6, Slot: 0.8}

// SlowdownTables are the named slowdown tables; "macro" gives every
// model MacroSlowdown.
var SlowdownTables = map[string]map[string]Slowdown{"ours": nil, "authors": AuthorsSlowdowns, "macro": nil}

// ModelsWithSlowdowns is the default model table with every model the
// named table knows given that table's factors; the others keep ours.
func ModelsWithSlowdowns(name string) (*workload.Models, error) {
	table, ok := SlowdownTables[name]
	if !ok {
		return nil, fmt.Errorf("unknown slowdown table %q (want ours, authors or macro)", name)
	}
	m := workload.DefaultModels()
	if name == "macro" {
		table = map[string]Slowdown{}
		for _, n := range m.Names() {
			table[n] = MacroSlowdown
		}
	}
	if table == nil {
		return m, nil
	}
	var b strings.Builder
	b.WriteString("models:\n")
	for _, n := range m.Names() {
		it, c, _ := m.Lookup(n)
		s, r := m.Sensitivity(n)
		sl := m.SlotFactor(n)
		if f, ok := table[n]; ok {
			s, r, sl = f.Machine, f.Rack, cmp.Or(f.Slot, 1)
		}
		fmt.Fprintf(&b, "  - {name: %s, iter_time_s: %v, class: %s, paper_class: %s, spread_factor: %v, rack_factor: %v, slot_factor: %v}\n", n, it, c, c, s, r, sl)
	}
	return workload.ParseModels("slowdowns "+name, []byte(b.String()))
}
