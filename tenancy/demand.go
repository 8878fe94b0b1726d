package tenancy

import (
	"fmt"
	"slices"
	"strings"

	"github.com/palsched/pal/internal/quote"
)

// Demand is what a job asks of the cells beyond its VC and pods: a pinned
// cell of its VC to run in (HiveD's pinnedCellId), and a leaf cell type
// (HiveD's leafCellType, a device model); "" for either means any.
type Demand struct {
	VC         string
	Pods       []int
	Priority   int
	PinnedCell string
	LeafType   string
}

// DemandError says why a demand can never be served, and which part of
// it is at fault: "pinned_cell", "leaf_cell_type" or "num_gpus" (the
// trace columns; pod annotations map to them).
type DemandError struct {
	Field string
	Msg   string
}

func (e *DemandError) Error() string { return e.Msg }

// CheckDemand reports whether a group could run in its VC's cells when
// the VC runs nothing else, counting pinned cells: a group naming a
// pinned cell is fitted into that cell, any other guaranteed group into
// the VC's cells that are not pinned (HiveD hands pinned cells only to
// the groups that name them), of the leaf type it asks for. It returns
// nil for a demand that fits, so that Schedule never fails on it.
func (s *Scheduler) CheckDemand(d Demand) *DemandError {
	vc := s.byVC[d.VC]
	if vc == nil {
		return &DemandError{"vc", fmt.Sprintf("unknown VC %s", quote.Value(d.VC))}
	}
	if d.LeafType != "" && !slices.Contains(s.leafTypes, d.LeafType) {
		return &DemandError{"leaf_cell_type", fmt.Sprintf("unknown leaf cell type %s (the cells have %s)", quote.Value(d.LeafType), strings.Join(s.leafTypes, ", "))}
	}
	if sku, ok := s.cfg.SKUs[d.LeafType]; d.LeafType != "" && ok && sku.HasGPU && sku.GPU == 0 {
		return &DemandError{"leaf_cell_type", fmt.Sprintf("leaf cell type %s is not a GPU (skuTypes gives it gpu: 0)", quote.Value(d.LeafType))}
	}
	if d.PinnedCell != "" {
		if d.Priority == Opportunistic {
			return &DemandError{"pinned_cell", fmt.Sprintf("an opportunistic job cannot ask for pinned cell %s (pinned cells serve their VC's guaranteed jobs)", quote.Value(d.PinnedCell))}
		}
		vcc := vc.byPin[d.PinnedCell]
		if vcc == nil {
			if s.pinned[d.PinnedCell] == nil {
				return &DemandError{"pinned_cell", fmt.Sprintf("unknown pinned cell %s", quote.Value(d.PinnedCell))}
			}
			return &DemandError{"pinned_cell", fmt.Sprintf("pinned cell %s is not VC %s's (VC %s has %s)", quote.Value(d.PinnedCell), d.VC, d.VC, pinList(vc))}
		}
		if d.LeafType != "" && vcc.chain.LeafType != d.LeafType {
			return &DemandError{"leaf_cell_type", fmt.Sprintf("pinned cell %s holds %s devices, not %s", quote.Value(d.PinnedCell), vcc.chain.LeafType, d.LeafType)}
		}
		if !fitsView(vcc, d.Pods) {
			return &DemandError{"num_gpus", fmt.Sprintf("pods %v never fit pinned cell %s together", d.Pods, quote.Value(d.PinnedCell))}
		}
		return nil
	}
	if d.Priority == Opportunistic {
		return nil
	}
	var views []*vcChain
	for _, vcc := range vc.chains {
		if vcc.chain.serves(d.LeafType) {
			views = append(views, vcc)
		}
	}
	if len(views) == 0 {
		switch {
		case len(vc.chains) == 0 && len(vc.pins) > 0:
			return &DemandError{"pinned_cell", fmt.Sprintf("VC %s's cells are all pinned (%s): name one in pinned_cell", d.VC, pinList(vc))}
		case d.LeafType != "":
			return &DemandError{"leaf_cell_type", fmt.Sprintf("VC %s has no cells of leaf type %s", d.VC, quote.Value(d.LeafType))}
		}
		return &DemandError{"num_gpus", fmt.Sprintf("VC %s has no GPU cells", d.VC)}
	}
	for _, vcc := range views {
		if fitsView(vcc, d.Pods) {
			return nil
		}
	}
	return &DemandError{"num_gpus", fmt.Sprintf("pods %v never fit VC %s's cells together", d.Pods, d.VC)}
}

func pinList(vc *VC) string {
	if len(vc.pins) == 0 {
		return "no pinned cells"
	}
	ids := make([]string, len(vc.pins))
	for i, p := range vc.pins {
		ids[i] = p.pinnedID
	}
	return "pinned cells " + strings.Join(ids, ", ")
}

// fitsView reports whether the pods fit one empty view of a VC.
func fitsView(vcc *vcChain, pods []int) bool {
	nodes := make([]viewNode, 0, len(vcc.view))
	for _, v := range vcc.view {
		nodes = append(nodes, viewNode{v: v, free: v.leaves, healthy: true, allowed: true})
	}
	sortView(nodes)
	at, _ := fitPods(nodes, pods)
	return at != nil
}
