package tenancy

import (
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
)

// WriteYAML writes a config in HiveD's format, so that a generated cluster
// (a replay's cells, say) is an input file a user can read, check and
// reuse. Parse reads back the same config.
func WriteYAML(w io.Writer, cfg *Config) error {
	var b strings.Builder
	q := strconv.Quote
	b.WriteString("physicalCluster:\n")
	if len(cfg.SKUs) > 0 {
		b.WriteString("  skuTypes:\n")
		names := make([]string, 0, len(cfg.SKUs))
		for n := range cfg.SKUs {
			names = append(names, n)
		}
		sort.Strings(names)
		for _, n := range names {
			if sku := cfg.SKUs[n]; sku.HasGPU {
				fmt.Fprintf(&b, "    %s: {gpu: %d}\n", q(n), sku.GPU)
			} else {
				fmt.Fprintf(&b, "    %s: {}\n", q(n))
			}
		}
	}
	b.WriteString("  cellTypes:\n")
	for _, t := range cfg.CellTypes {
		fmt.Fprintf(&b, "    %s: {childCellType: %s, childCellNumber: %d, isNodeLevel: %v}\n", q(t.Name), q(t.ChildCellType), t.ChildCellNumber, t.IsNodeLevel)
	}
	b.WriteString("  physicalCells:\n")
	var cell func(p PhysicalCellSpec, indent string, top bool)
	cell = func(p PhysicalCellSpec, indent string, top bool) {
		var f []string
		if top || p.CellType != "" {
			f = append(f, "cellType: "+q(p.CellType))
		}
		if p.CellAddress != "" {
			f = append(f, "cellAddress: "+q(p.CellAddress))
		}
		if p.PinnedCellID != "" {
			f = append(f, "pinnedCellId: "+q(p.PinnedCellID))
		}
		if len(p.Children) == 0 {
			fmt.Fprintf(&b, "%s- {%s}\n", indent, strings.Join(f, ", "))
			return
		}
		fmt.Fprintf(&b, "%s- %s\n", indent, strings.Join(append(f, "cellChildren:"), "\n"+indent+"  "))
		for _, c := range p.Children {
			cell(c, indent+"  ", false)
		}
	}
	for _, p := range cfg.PhysicalCells {
		cell(p, "  ", true)
	}
	b.WriteString("virtualClusters:\n")
	for _, vc := range cfg.VCs {
		fmt.Fprintf(&b, "  %s:\n    virtualCells:\n", q(vc.Name))
		for _, v := range vc.VirtualCells {
			fmt.Fprintf(&b, "    - {cellType: %s, cellNumber: %d}\n", q(v.CellType), v.CellNumber)
		}
		if len(vc.PinnedCells) > 0 {
			b.WriteString("    pinnedCells:\n")
			for _, p := range vc.PinnedCells {
				fmt.Fprintf(&b, "    - {pinnedCellId: %s}\n", q(p.PinnedCellID))
			}
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
