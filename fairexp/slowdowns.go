package fairexp

import (
	"fmt"
	"strings"

	"github.com/palsched/pal/workload"
)

// Slowdown is a model's throughput factor when a job's GPUs cross
// machines and when they cross racks (1 = no slowdown).
type Slowdown struct{ Machine, Rack float64 }

// AuthorsSlowdowns are the Themis authors' simulator's factors for its
// models (its Themis model statistics; crossing slots costs nothing there).
var AuthorsSlowdowns = map[string]Slowdown{
	"vgg19": {0.70, 0.50}, "vgg16": {0.72, 0.52}, "vgg11": {0.75, 0.56}, "alexnet": {0.80, 0.64},
	"resnet50": {0.98, 0.96}, "resnet101": {0.98, 0.96}, "resnet152": {0.98, 0.96},
	"inception3": {0.98, 0.96}, "inception4": {0.98, 0.96}, "googlenet": {0.98, 0.96},
}

// SlowdownTables are the named slowdown tables.
var SlowdownTables = map[string]map[string]Slowdown{"ours": nil, "authors": AuthorsSlowdowns}

// ModelsWithSlowdowns is the default model table with every model the
// named table knows given that table's factors; the others keep ours.
func ModelsWithSlowdowns(name string) (*workload.Models, error) {
	table, ok := SlowdownTables[name]
	if !ok {
		return nil, fmt.Errorf("unknown slowdown table %q (want ours or authors)", name)
	}
	m := workload.DefaultModels()
	if table == nil {
		return m, nil
	}
	var b strings.Builder
	b.WriteString("models:\n")
	for _, n := range m.Names() {
		it, c, _ := m.Lookup(n)
		s, r := m.Sensitivity(n)
		if f, ok := table[n]; ok {
			s, r = f.Machine, f.Rack
		}
		fmt.Fprintf(&b, "  - {name: %s, iter_time_s: %v, class: %s, paper_class: %s, spread_factor: %v, rack_factor: %v}\n", n, it, c, c, s, r)
	}
	return workload.ParseModels("slowdowns "+name, []byte(b.String()))
}
