package tenancy

import (
	"testing"
)

// OpenPAI's mixed SKUs: worker1 holds 4 GPUs (chain GPU-NODE) and 8 CPU
// cells (chain CPU-NODE, skuTypes gpu: 0), each numbered from 0. VC A
// has one cell of each; VC B a GPU node of its own.
const mixedSKUs = `physicalCluster:
  skuTypes:
    DT: {gpu: 1, cpu: 5, memory: 56Gi}
    CPU: {gpu: 0, cpu: 1, memory: 10Gi}
  cellTypes:
    GPU-NODE: {childCellType: DT, childCellNumber: 4, isNodeLevel: true}
    CPU-NODE: {childCellType: CPU, childCellNumber: 8, isNodeLevel: true}
  physicalCells:
  - {cellType: GPU-NODE, cellAddress: worker1}
  - {cellType: CPU-NODE, cellAddress: worker1}
  - {cellType: GPU-NODE, cellAddress: worker2}
virtualClusters:
  A: {virtualCells: [{cellType: GPU-NODE, cellNumber: 1}, {cellType: CPU-NODE, cellNumber: 1}]}
  B: {virtualCells: [{cellType: GPU-NODE, cellNumber: 1}]}
`

// mixedScheduler is a scheduler on mixedSKUs.
func mixedScheduler(t *testing.T) *Scheduler {
	t.Helper()
	cfg, err := Parse("mixed.yaml", []byte(mixedSKUs))
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// CPU cells share a node with GPUs, and a GPU demand never gets them:
// the VC's GPUs are its 4 GPU cells, 8 pods of one never fit, and a
// second 4-GPU gang waits instead of taking the CPU node.
func TestCPUChainsServeNoGPUDemand(t *testing.T) {
	s := mixedScheduler(t)
	if got := s.MaxNode(); got != 4 {
		t.Errorf("MaxNode %d, want 4 (worker1's GPUs; its CPUs are not GPUs)", got)
	}
	if got := s.VCDevices("A"); got != 4 {
		t.Errorf("VC A holds %d GPUs, want 4", got)
	}
	nodes := s.Nodes()
	if len(nodes) != 2 || nodes[0].Name != "worker1" || len(nodes[0].Devices) != 4 || len(nodes[1].Devices) != 4 {
		t.Errorf("nodes %+v, want worker1 and worker2 with 4 GPUs each", nodes)
	}
	cases := []struct {
		d    Demand
		want string
	}{
		{Demand{VC: "A", Pods: []int{4}}, ""},
		{Demand{VC: "A", Pods: []int{1, 1, 1, 1, 1, 1, 1, 1}}, "pods [1 1 1 1 1 1 1 1] never fit VC A's cells together"},
		{Demand{VC: "A", Pods: []int{1}, LeafType: "CPU"}, `leaf cell type "CPU" is not a GPU (skuTypes gives it gpu: 0)`},
		{Demand{VC: "A", Pods: []int{1}, LeafType: "DT"}, ""},
		{Demand{VC: "A", Pods: []int{1}, LeafType: "K80"}, `unknown leaf cell type "K80" (the cells have CPU, DT)`},
	}
	for _, c := range cases {
		got := ""
		if e := s.CheckDemand(c.d); e != nil {
			got = e.Msg
		}
		if got != c.want {
			t.Errorf("%+v: %q, want %q", c.d, got, c.want)
		}
	}
	d, err := s.Schedule(Request{Group: "g1", VC: "A", Pods: []int{4}})
	if err != nil || !d.Placed || d.Chain != "GPU-NODE" {
		t.Fatalf("first gang: %+v, %v; want placed on chain GPU-NODE", d, err)
	}
	d, err = s.Schedule(Request{Group: "g2", VC: "A", Pods: []int{4}})
	if err != nil || d.Placed {
		t.Fatalf("second gang: %+v, %v; want it to wait (only CPU cells left)", d, err)
	}
	// Opportunistic gangs scavenge GPUs only: worker2's, never the CPUs.
	d, err = s.Schedule(Request{Group: "o1", VC: "A", Priority: Opportunistic, Pods: []int{4}})
	if err != nil || !d.Placed || d.Chain != "GPU-NODE" {
		t.Fatalf("opportunistic gang: %+v, %v; want placed on chain GPU-NODE", d, err)
	}
	d, err = s.Schedule(Request{Group: "o2", VC: "A", Priority: Opportunistic, Pods: []int{4}})
	if err != nil || d.Placed {
		t.Fatalf("second opportunistic gang: %+v, %v; want it to wait", d, err)
	}
	if err := s.Check(); err != nil {
		t.Fatal(err)
	}
}
