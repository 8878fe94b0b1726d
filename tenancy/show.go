package tenancy

import (
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"

	"github.com/palsched/pal/internal/intruns"
)

// WriteCheck prints what `pal cells check` shows: every chain with its
// levels, each VC's cells, and the splittable margin per level (how many
// more cells of that level the free cells could still give beyond what
// the VCs are owed).
func (s *Scheduler) WriteCheck(w io.Writer) error {
	if warn := s.cfg.Warning(); warn != "" {
		fmt.Fprintln(w, "warning:", warn)
	}
	devices := len(s.leaves)
	fmt.Fprintf(w, "%s: %d chains, %d nodes, %d devices, %d VCs\n", s.cfg.File, len(s.chains), len(s.byNode), devices, len(s.vcs))
	for _, ch := range s.chains {
		fmt.Fprintf(w, "\nchain %s: leaf type %s, %d top-level cells, %d devices\n", ch.Name, ch.LeafType, len(ch.tops), ch.leaves)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  level\ttype\tdevices/cell\tfree cells\tVC cells unbound\tsplittable")
		sp := ch.splittable()
		for l := ch.Top(); l >= 1; l-- {
			t := ch.types[l]
			name := t.name
			if l == ch.NodeLevel {
				name += " (node)"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%d\t%d\t%d\t%d\n", l, name, t.leaves, len(ch.free[l]), ch.vcUnused[l], sp[l])
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	fmt.Fprintln(w)
	for _, vc := range s.vcs {
		var parts []string
		for _, vcc := range vc.chains {
			for l := vcc.chain.Top(); l >= 1; l-- {
				if n := vcc.reserved[l]; n > 0 {
					parts = append(parts, fmt.Sprintf("%d x %s/%s", n, vcc.chain.Name, vcc.chain.types[l].name))
				}
			}
		}
		for _, vcc := range vc.pins {
			parts = append(parts, fmt.Sprintf("pinned %s (%s)", vcc.pinnedID, vcc.pinned.Addr))
		}
		if len(parts) == 0 {
			parts = []string{"no cells"}
		}
		fmt.Fprintf(w, "VC %s: %s; %d devices\n", vc.Name, strings.Join(parts, ", "), s.VCDevices(vc.Name))
	}
	fmt.Fprintln(w, "\nOK: the initial VC assignment is feasible (every splittable margin >= 0)")
	return nil
}

// WriteTree prints the physical hierarchy down to the nodes, marking
// pinned cells (and their VC) and listing each node's devices.
func (s *Scheduler) WriteTree(w io.Writer) error {
	pinVC := map[*PCell]string{}
	for _, vc := range s.vcs {
		for _, vcc := range vc.pins {
			pinVC[vcc.pinned] = vc.Name
		}
	}
	var walk func(p *PCell, indent string)
	walk = func(p *PCell, indent string) {
		ch := p.chain
		t := ch.types[p.level]
		var b strings.Builder
		fmt.Fprintf(&b, "%s%s %s", indent, p.Addr, t.name)
		if p.pinned != "" {
			fmt.Fprintf(&b, " [pinned %s", p.pinned)
			if vc := pinVC[p]; vc != "" {
				fmt.Fprintf(&b, " → VC %s", vc)
			}
			b.WriteString("]")
		}
		if p.level == ch.NodeLevel {
			var gpus []int
			for _, l := range pleavesOf(p, nil) {
				gpus = append(gpus, l.gpu)
			}
			fmt.Fprintf(&b, ": devices %s", intList(gpus))
			var pins []string
			var find func(c *PCell)
			find = func(c *PCell) {
				if c != p && c.pinned != "" {
					pins = append(pins, fmt.Sprintf("%s = %s", c.pinned, c.Addr))
				}
				for _, k := range c.children {
					find(k)
				}
			}
			find(p)
			if len(pins) > 0 {
				fmt.Fprintf(&b, " (pinned inside: %s)", strings.Join(pins, ", "))
			}
		}
		fmt.Fprintln(w, b.String())
		if p.level > ch.NodeLevel {
			for _, c := range p.children {
				walk(c, indent+"  ")
			}
		}
	}
	for _, ch := range s.chains {
		var levels []string
		for l := ch.Top(); l >= 1; l-- {
			levels = append(levels, fmt.Sprintf("%s×%d", ch.types[l].name, ch.types[l].childNum))
		}
		levels[len(levels)-1] = ch.types[1].name
		fmt.Fprintf(w, "chain %s: %s\n", ch.Name, strings.Join(levels, " → "))
		for _, t := range ch.tops {
			walk(t, "  ")
		}
	}
	return nil
}

// intList renders ascending runs compactly: 0-3,8-9,12.
func intList(xs []int) string {
	if len(xs) == 0 {
		return "none"
	}
	sorted := append([]int(nil), xs...)
	sort.Ints(sorted)
	same := true
	for i := range xs {
		same = same && xs[i] == sorted[i]
	}
	if !same {
		parts := make([]string, len(xs))
		for i, x := range xs {
			parts[i] = fmt.Sprint(x)
		}
		return strings.Join(parts, ",")
	}
	return intruns.Format(xs, ",")
}
