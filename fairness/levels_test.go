package fairness

import (
	"slices"
	"testing"
)

// S(G) on the authors' levels (2 racks x 2 machines x 2 slots x 2 GPUs):
// the widest boundary crossed decides.
func TestPlacementLevels(t *testing.T) {
	l, err := ParseLevels("2x2x2x2")
	if err != nil {
		t.Fatal(err)
	}
	topo, err := LevelTopology(l)
	if err != nil {
		t.Fatal(err)
	}
	macro := Sensitivity{Slot: 0.8, Machine: 0.7, Rack: 0.6}
	for _, c := range []struct {
		gpus []int
		want float64
	}{{[]int{0}, 1}, {[]int{0, 1}, 1}, {[]int{0, 2}, 0.8}, {[]int{1, 2, 3}, 0.8}, {[]int{0, 4}, 0.7}, {[]int{0, 1, 2, 5}, 0.7}, {[]int{0, 8}, 0.6}, {[]int{3, 4, 15}, 0.6}} {
		if got := topo.Placement(c.gpus, macro); got != c.want {
			t.Errorf("S(%v) = %v, want %v", c.gpus, got, c.want)
		}
	}
	// Without a slot factor, crossing slots is free (the authors' model
	// statistics).
	if got := topo.Placement([]int{0, 2}, Sensitivity{Machine: 0.7}); got != 1 {
		t.Errorf("no slot factor: S = %v, want 1", got)
	}
	for _, bad := range []string{"2x2x2", "0x1x1x1", "2x2x2x2x2", "axbxcxd", "1x1x1x-1"} {
		if _, err := ParseLevels(bad); err == nil {
			t.Errorf("%q accepted", bad)
		}
	}
	if err := (Sensitivity{Machine: 0.7, Slot: 0.6}).Validate(); err == nil {
		t.Error("slot factor below the machine factor accepted")
	}
}

// A 2-GPU gang offered GPU 0 (slot 0) and GPUs 2, 3 (slot 1) of one
// machine takes the whole slot: its bid sees the slot factor and the
// bundle is packed by slot.
func TestBundlePackedBySlot(t *testing.T) {
	topo, err := LevelTopology(Levels{Racks: 1, MachinesPerRack: 1, SlotsPerMachine: 2, GPUsPerSlot: 2})
	if err != nil {
		t.Fatal(err)
	}
	a := &App{Name: "a", TotalWork: 200, Demand: 2, Sens: Sensitivity{Slot: 0.8, Machine: 0.7}, NAvg: 1,
		Jobs: []Job{{Remaining: 200, MaxGPUs: 2, Gang: true}}}
	opt := DefaultOptions()
	opt.Payment = PayOff
	res, err := Run(Input{Topo: topo, Now: 0, Apps: []*App{a}, Offer: []int{0, 2, 3}}, opt)
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Apps[0].Final; !slices.Equal(got, []int{2, 3}) {
		t.Errorf("gang got %v, want [2 3]", got)
	}
}

// ParseLevels never panics, and what it accepts builds a topology of the
// size it names.
func FuzzParseLevels(f *testing.F) {
	for _, s := range []string{"2x2x2x4", "1x1x1x1", "2x4x4x4", "0x1x1x1", "9999999x9999999x9999999x9999999", "2x2x2", "x", "-1x2x2x2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		l, err := ParseLevels(s)
		if err != nil {
			if len(err.Error()) > 1024 {
				t.Fatalf("error of %d bytes: %.300v", len(err.Error()), err)
			}
			return
		}
		if l.Racks < 1 || l.MachinesPerRack < 1 || l.SlotsPerMachine < 1 || l.GPUsPerSlot < 1 || l.Machines()*l.GPUsPerMachine() > 1<<20 {
			t.Fatalf("accepted %q as %+v", s, l)
		}
		if l.Machines()*l.GPUsPerMachine() <= 4096 {
			topo, err := LevelTopology(l)
			if err != nil || topo.NumGPUs() != l.Machines()*l.GPUsPerMachine() {
				t.Fatalf("%q: topology %v, %v", s, topo, err)
			}
		}
	})
}
